/**
 * Every chapter's offline demo, in-process: `start` with nothing configured announces the
 * demo and runs the whole script through the real loop, tools and SDK client against the
 * fake server (cli.test.ts starts s01's the way a learner does).
 */
import { existsSync, rmSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { chaptersFrom } from "./chapters.ts";
import { Capture, loadMain } from "./helpers/run.ts";

describe.concurrent.each(chaptersFrom("s01"))("$id offline demo", (chapter) => {
  it("runs when no key, token or base URL is configured, and finishes its script", async () => {
    const main = await loadMain(chapter);
    const stdout = new Capture();
    const code = await main({
      argv: [],
      stdin: Readable.from(["this line is ignored\n"]),
      stdout,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1" },
    });
    expect(code).toBe(0);
    const out = stdout.text;
    expect(out).toContain("No model configured: running this chapter's offline demo.");
    expect(out).toContain(`Offline demo (${chapter.id})`);
    expect(out).toContain(`${chapter.id}: ${chapter.title}`);
    expect(out).not.toMatch(/API error|scripted model: no step left|connection error/);
    expect(out).not.toContain("this line is ignored");
    const kept = /workspace is kept at (\S+)/.exec(out)?.[1];
    expect(kept && existsSync(path.join(kept, ".harness", "logs"))).toBe(true);
    rmSync(kept!, { recursive: true, force: true });
  });
});
