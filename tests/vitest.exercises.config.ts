import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * One exercise's check (`pnpm course exercise check <id>` sets EXERCISE_CHECK, the check
 * file, and EXERCISE_DIR, the copy it runs against). The copy loads as Node loads it for the
 * learner, through tsx, like the chapters in the suites.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const under = (dir: string) => new RegExp(`^${escaped(path.resolve(dir))}/.*\\.ts$`);

export default defineConfig({
  test: {
    root,
    include: [path.relative(root, process.env.EXERCISE_CHECK ?? "exercises/*/check.ts")],
    testTimeout: 30000,
    // A failure shows the whole value the copy produced: the learner reads it to fix the code.
    chaiConfig: { truncateThreshold: 0 },
    setupFiles: [path.join(root, "tests", "setup.ts")],
    execArgv: ["--import", "tsx/esm"],
    server: {
      deps: {
        external: [
          under(process.env.EXERCISE_DIR ?? path.join(root, "exercises", "work")),
          under(path.join(root, "shared", "src")),
        ],
      },
    },
  },
});
