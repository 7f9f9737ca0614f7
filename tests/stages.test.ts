/**
 * The stage order of one round (s15, loop.ts's header and the README's diagram), through
 * the chapter: one turn in which the model call is retried, redone at max_tokens, its tool
 * calls pass the gates in order, a Stop hook continues the turn, and memory extraction
 * runs after it. Stage a (the todo reminder before background notifications) is pinned by
 * background.test.ts on every chapter from s11.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { apiError, reply, ScriptedModel, startFakeServer, text, toolUse } from "shared/testing";
import { describe, expect, it } from "vitest";
import { carried, chaptersFrom, moduleVersions } from "./chapters.ts";
import {
  afterTools,
  lastMentions,
  lastToolResults,
  RETRY_AT_ONCE,
  runChapter,
} from "./helpers/run.ts";

const hook = (command: string, matcher?: string) => [
  { ...(matcher ? { matcher } : {}), hooks: [{ type: "command", command }] },
];

// The stage order is the list in main.ts; it runs where the loop differs and on the newest.
const STAGES = moduleVersions("s15", [
  "loop.ts",
  "permissions.ts",
  "permission-rules.ts",
  "hooks.ts",
  "recovery.ts",
]);

describe.each(carried(chaptersFrom("s15"), STAGES))("$id stages of a round", (chapter) => {
  it("retries, then redoes at max_tokens, runs PreToolUse hooks before the gates, and stops through the hooks", async () => {
    const cut = (r: ReturnType<typeof reply>) => ({ ...r, stop_reason: "max_tokens" as const });
    const server = await startFakeServer({
      model: new ScriptedModel([
        { reply: cut(reply(text("Let me"))) },
        {
          reply: reply(
            toolUse("bash", { command: "rm gone.txt" }, "toolu_rm"),
            toolUse("bash", { command: "echo ran >> order.log" }, "toolu_echo"),
          ),
        },
        { when: afterTools, reply: reply(text("Done.")) },
        { when: lastMentions("one more look"), reply: reply(text("Checked again.")) },
      ]),
    });
    server.failNext(apiError(529, "overloaded_error", "Overloaded", { headers: RETRY_AT_ONCE }));
    try {
      const run = await runChapter(chapter, {
        prompts: ["tidy up"],
        server,
        memoryExtraction: true,
        files: {
          "gone.txt": "keep me",
          ".claude/settings.json": JSON.stringify({
            hooks: {
              PreToolUse: hook("echo pre >> order.log", "bash"),
              PostToolUse: hook("echo post >> order.log", "bash"),
              Stop: hook('test -f stopped || { touch stopped; echo "one more look" >&2; exit 2; }'),
            },
          }),
        },
      });
      expect(run.code).toBe(0);
      // d then e: the 529 is retried inside the call; the cut-off reply is then redone.
      // Every attempt is a request: the one the 529 answered, then the same call again.
      expect(run.requests.map((r) => r.max_tokens)).toEqual([8000, 8000, 16000, 8000, 8000, 1000]);
      expect(run.requests[1]).toEqual(run.requests[0]);
      // g: PreToolUse before the gates, the handler, then PostToolUse; the denied call is
      // seen by PreToolUse only, and both results ride in one message, in call order.
      expect(readFileSync(path.join(run.workdir, "order.log"), "utf8")).toBe(
        "pre\npre\nran\npost\n",
      );
      expect(readFileSync(path.join(run.workdir, "gone.txt"), "utf8")).toBe("keep me");
      expect(lastToolResults(run.requests[3]!).map((r) => [r.tool_use_id, r.is_error])).toEqual([
        ["toolu_rm", true],
        ["toolu_echo", undefined],
      ]);
      // f: the Stop hook continues the turn; memory extraction comes after the turn's end.
      expect(JSON.stringify(run.requests[4]!.messages.at(-1))).toContain("one more look");
      expect(run.requests[5]!.tools).toBeUndefined();
      const order = [
        "[retry] overloaded (529)",
        "[max_tokens] the reply hit 8000 tokens",
        "[permission] Potentially destructive command: rm",
        "[denied] Permission denied: approval needed",
        "[hook] Stop (",
        "Checked again.",
        "[usage]",
      ].map((line) => run.output.indexOf(line));
      expect(order.every((at) => at >= 0)).toBe(true);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    } finally {
      await server.close();
    }
  });
});
