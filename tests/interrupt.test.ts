/**
 * Interrupts (s15): Ctrl-C cancels the turn in flight and keeps the session, with a history
 * the API accepts: the repair rules of interrupt.ts, and a turn cancelled while the model is
 * still answering.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import { reply, ScriptedModel, startFakeServer, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as InterruptModule from "../chapters/s15-integrated/src/interrupt.ts";
import { carried, chaptersFrom, importChapter, moduleVersions } from "./chapters.ts";
import { lastMentions, runChapter, tempWorkspace, userSaid } from "./helpers/run.ts";

type MessageParam = Anthropic.MessageParam;
const NOTE = { type: "text", text: "[Interrupted by the user]" };

describe.each(moduleVersions("s15", ["interrupt.ts"]))("$id interrupt repair", (chapter) => {
  let interrupt: typeof InterruptModule;
  beforeAll(async () => {
    interrupt = await importChapter<typeof InterruptModule>(chapter, "interrupt.ts");
  });

  it("answers every unanswered tool_use with an is_error result, then the note", () => {
    const call = (id: string) =>
      toolUse("bash", { command: "sleep 9" }, id) as Anthropic.ToolUseBlockParam;
    const history: MessageParam[] = [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: [{ type: "text", text: "Two." }, call("toolu_a"), call("toolu_b")],
      },
    ];
    interrupt.repairInterrupted(history);
    expect(history[2]).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_a",
          content: "Interrupted by the user",
          is_error: true,
        },
        {
          type: "tool_result",
          tool_use_id: "toolu_b",
          content: "Interrupted by the user",
          is_error: true,
        },
        NOTE,
      ],
    });
  });

  it("adds the note to a last user message as a new object, and the next input joins only that", () => {
    const input: MessageParam = { role: "user", content: "go" };
    const history: MessageParam[] = [input];
    interrupt.repairInterrupted(history);
    expect(history).toEqual([{ role: "user", content: [{ type: "text", text: "go" }, NOTE] }]);
    expect(history[0]).not.toBe(input);
    const before = history.slice();
    interrupt.appendInput(history, "next");
    expect(history).toEqual([
      {
        role: "user",
        content: [{ type: "text", text: "go" }, NOTE, { type: "text", text: "next" }],
      },
    ]);
    // The joined message is new: a failed turn that restores `before` gets the repair back.
    expect(before[0]).not.toBe(history[0]);
    // Any other last user message (a compaction summary) keeps the input apart.
    const summary: MessageParam[] = [{ role: "user", content: "summary" }];
    interrupt.appendInput(summary, "after");
    expect(summary).toEqual([
      { role: "user", content: "summary" },
      { role: "user", content: "after" },
    ]);
  });
});

const COURSE_SERVER = new URL("../chapters/s15-integrated/servers/course-mcp.mjs", import.meta.url)
  .pathname;

const INTERRUPT = moduleVersions("s15", [
  "interrupt.ts",
  "repl.ts",
  "mcp.ts",
  "mcp-config.ts",
  "mcp-client.ts",
]);

describe.concurrent.each(carried(chaptersFrom("s15"), INTERRUPT))(
  "$id interrupt through the chapter",
  (chapter) => {
    it("Ctrl-C during an MCP call cancels it on the server (notifications/cancelled) at once", async () => {
      let interrupt: (() => void) | undefined;
      const workdir = tempWorkspace("interrupt-mcp");
      const record = path.join(workdir, "received.jsonl");
      const args = [COURSE_SERVER, "docs", "--hang-on", "search", "--record", record];
      const started = Date.now();
      const stdin = new PassThrough();
      stdin.write("search\n");
      const run = await runChapter(chapter, {
        workdir,
        stdin,
        files: {
          ".mcp.json": JSON.stringify({ mcpServers: { docs: { command: "node", args } } }),
          ".claude/settings.json": JSON.stringify({ permissions: { allow: ["mcp__docs"] } }),
        },
        onSignal: (handler) => {
          interrupt = handler;
        },
        // Ctrl-C once the server holds the call (it never answers a search, as asked); the
        // session ends once the server has recorded the cancel (at most 5 s), not before.
        onOutput: (stdout) => {
          const holds = (text: string) =>
            existsSync(record) && readFileSync(record, "utf8").includes(text);
          const until = async (text: string) => {
            for (let waited = 0; !holds(text) && waited < 5000; waited += 20) {
              await new Promise((resolve) => setTimeout(resolve, 20));
            }
          };
          void stdout.waitFor("[allowed] by allow rule mcp__docs").then(async () => {
            await until('"tools/call"');
            interrupt?.();
            await until('"notifications/cancelled"');
            stdin.end();
          });
        },
        steps: [
          {
            when: (r) => r.messages.length === 1,
            reply: reply(toolUse("connect_mcp", { name: "docs" })),
          },
          {
            when: (r) => r.messages.length === 3,
            reply: reply(toolUse("mcp__docs__search", { query: "x" })),
          },
        ],
      });
      // The turn's usage line still follows (its first call counts).
      expect(run.output).toMatch(/\[interrupted\]\n\[usage\] in \d+/);
      // Well before the 60 s call timeout.
      expect(Date.now() - started).toBeLessThan(10_000);
      const received = readFileSync(record, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      const call = received.find((m) => m.method === "tools/call");
      expect(received.find((m) => m.method === "notifications/cancelled")).toEqual({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: call.id, reason: "interrupted by the user" },
      });
    });

    it("Ctrl-C while the model answers drops the partial reply and the next request is valid", async () => {
      let interrupt: (() => void) | undefined;
      const server = await startFakeServer({
        latencyMs: 300,
        model: new ScriptedModel([
          {
            when: userSaid("think long"),
            reply: () => {
              interrupt?.();
              return reply(text("too late"));
            },
          },
          { when: lastMentions("next"), reply: reply(text("next answered")) },
        ]),
      });
      try {
        const run = await runChapter(chapter, {
          prompts: ["think long", "next"],
          server,
          onSignal: (handler) => {
            interrupt = handler;
          },
        });
        expect(run.code).toBe(0);
        expect(run.output).toContain("[interrupted]");
        expect(run.output).not.toContain("too late");
        expect(run.output).toContain("next answered");
        expect(run.received.map((r) => r.rejected)).toEqual([null, null]);
        expect(run.requests[1]!.messages).toEqual([
          {
            role: "user",
            content: [{ type: "text", text: "think long" }, NOTE, { type: "text", text: "next" }],
          },
        ]);
      } finally {
        await server.close();
      }
    });
  },
);
