/**
 * s01–s02's block list (s01 §0.9). s03 replaces guard.ts with the permission pipeline, so
 * this suite stops there (tests/chapters.ts says so).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type * as GuardModule from "../chapters/s01-loop/src/guard.ts";
import { chaptersFrom, importChapter } from "./chapters.ts";

describe.each(chaptersFrom("s01", "block list"))("$id block list", (chapter) => {
  let guard: typeof GuardModule;
  beforeAll(async () => {
    guard = await importChapter<typeof GuardModule>(chapter, "guard.ts");
  });
  const check = (command: string) =>
    guard.guard(
      { id: "t", name: "bash", input: { command } },
      { workdir: "/tmp", signal: new AbortController().signal, scope: "main" },
    );

  it.each([
    ["rm -rf / --no-preserve-root", "rm -rf /"],
    ["sudo ls", "sudo"],
    ["shutdown now", "shutdown"],
    ["reboot", "reboot"],
    ["echo x > /dev/sda", "> /dev/"],
    ["cat file >/dev/nvme0n1", "> /dev/"],
  ])("blocks %j as '%s'", async (command, entry) => {
    expect(await check(command)).toEqual({
      content: `Error: Dangerous command blocked: '${entry}' is on the block list`,
      isError: true,
    });
  });

  it.each([
    "echo hi",
    "ls -la",
    "echo x 2>/dev/null",
    "ls > /dev/null",
    "echo x >/dev/stderr",
    "cat /dev/urandom | head -c 1",
  ])("lets %j run", async (command) => {
    expect(await check(command)).toBeNull();
  });

  it("only looks at bash", async () => {
    expect(
      await guard.guard(
        { id: "t", name: "other", input: { command: "sudo" } },
        { workdir: "/tmp", signal: new AbortController().signal, scope: "main" },
      ),
    ).toBeNull();
  });
});
