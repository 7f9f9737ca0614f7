import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The suites that take longest start first, so no worker is left alone with one at the end.
 * vitest orders by the last run's timings, which a fresh clone (CI's first Node line, a
 * newcomer's first run) does not have: without them it starts the largest files first and
 * left demo.test.ts (7 s) for the end. Order: CI's timings with 17 chapters, over 1 s.
 */
const LONGEST = [
  "cli.test.ts",
  "demo.test.ts",
  "loop.test.ts",
  "background.test.ts",
  "teams.test.ts",
  "hooks.test.ts",
  "tools.test.ts",
  "cron.test.ts",
  "memory.test.ts",
  "properties.test.ts",
  "compact.test.ts",
  "mcp.test.ts",
  "subagent.test.ts",
  "tasks.test.ts",
  "recovery.test.ts",
  "log.test.ts",
  "todo.test.ts",
  "workflow.test.ts",
  "seams.test.ts",
];

/** Files under `dir` of this repository, wherever it is cloned. */
function underRoot(dir: string): RegExp {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", dir);
  return new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/.*\\.ts$`);
}

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = LONGEST.indexOf(path.basename(file.moduleId));
      return at < 0 ? LONGEST.length : at;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ["**/*.test.ts"],
    exclude: ["**/node_modules/**", "fixtures/**"],
    testTimeout: 20000,
    setupFiles: ["./setup.ts"],
    // Many tests wait on child processes and timers rather than the CPU: three workers keep
    // two cores busy (vitest's default on a 2-core machine is one). Measured on 2 cores with
    // s15: 2 workers 65 s, 3 workers 52-57 s, 4 workers 55 s.
    maxWorkers: 3,
    // The chapters and `shared` load as Node loads them for a learner (tsx strips the types,
    // with its cache on disk) instead of through vite's transform and module runner: a worker
    // imported all seventeen chapters in 6.4 s of CPU that way and in 2.1 s this way. Test
    // files and helpers still go through vite. Nothing here mocks a module, so nothing needs
    // vite's hold on them.
    execArgv: ["--import", "tsx/esm"],
    server: { deps: { external: [underRoot("chapters/"), underRoot("shared/src/")] } },
    // Test files share a worker's module cache instead of each loading every chapter anew:
    // most files import the same ten-plus chapters, and reloading them per file was about a
    // sixth of the suite's time. Tests keep no module-level state that another file reads.
    isolate: false,
    sequence: { sequencer: LongestFirst },
  },
});
