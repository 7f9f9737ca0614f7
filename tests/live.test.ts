/**
 * Opt-in: one real turn per chapter against the configured endpoint. Runs only with
 * RUN_LIVE_TESTS=1 and a key or token in the environment; otherwise it is skipped, and
 * vitest lists it as skipped.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { CHAPTERS } from "./chapters.ts";
import { Capture, loadMain, tempWorkspace } from "./helpers/run.ts";

const live =
  process.env.RUN_LIVE_TESTS === "1" &&
  Boolean(process.env.ANTHROPIC_API_KEY || process.env.ANTHROPIC_AUTH_TOKEN);

describe.skipIf(!live)("live: one real turn per chapter (RUN_LIVE_TESTS=1)", () => {
  it.each(CHAPTERS)(
    "$id answers and runs a tool",
    async (chapter) => {
      const main = await loadMain(chapter);
      const workdir = tempWorkspace(`live-${chapter.id}`);
      const stdout = new Capture();
      const code = await main({
        argv: [],
        stdin: Readable.from([
          "Use bash to run `echo live-check > live.txt`, then reply with the single word done.\n",
        ]),
        stdout,
        env: { ...process.env, WORKDIR: workdir, NO_COLOR: "1" },
      });
      expect(code).toBe(0);
      expect(readFileSync(path.join(workdir, "live.txt"), "utf8")).toBe("live-check\n");
      expect(stdout.text).not.toContain("API error");
    },
    120_000,
  );
});
