/**
 * s01–s02's block list. s03 replaces guard.ts with the permission pipeline, so this suite
 * stops there (tests/chapters.ts says so).
 */
import { toolMap } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as BashModule from "../chapters/s01-loop/src/bash.ts";
import type * as GuardModule from "../chapters/s01-loop/src/guard.ts";
import { chaptersFrom, importChapter } from "./chapters.ts";
import { runContext } from "./helpers/context.ts";
import { afterTools, lastToolResults, runChapter } from "./helpers/run.ts";

describe.each(chaptersFrom("s01", "block list"))("$id block list", (chapter) => {
  let guard: typeof GuardModule;
  let bash: typeof BashModule;
  beforeAll(async () => {
    guard = await importChapter<typeof GuardModule>(chapter, "guard.ts");
    bash = await importChapter<typeof BashModule>(chapter, "bash.ts");
  });
  const run = () => runContext({ tools: toolMap([bash.bashTool({ timeoutMs: 1000 })]) });
  const check = (command: string) =>
    guard.guard({ id: "t", name: "bash", input: { command } }, run());

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

  it("only looks at calls that run a command (the tool's target says so)", async () => {
    expect(
      await guard.guard({ id: "t", name: "other", input: { command: "sudo" } }, run()),
    ).toBeNull();
  });

  it("is plugged into the chapter: a blocked command never runs and the model is told why", async () => {
    const outcome = await runChapter(chapter, {
      prompts: ["clean up"],
      steps: [
        { reply: reply(toolUse("bash", { command: "sudo touch gone.txt" }, "toolu_1")) },
        { when: afterTools, reply: reply(text("ok")) },
      ],
    });
    expect(lastToolResults(outcome.requests[1]!)).toEqual([
      {
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: "Error: Dangerous command blocked: 'sudo' is on the block list",
        is_error: true,
      },
    ]);
  });
});
