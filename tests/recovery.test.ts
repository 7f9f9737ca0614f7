/**
 * Recovery (s15): one retry layer around every model call. The module's rules (what is
 * retried, how long it waits) and, through the chapter against the fake API's injected
 * faults, what the model was sent and what the user saw: retries on the same model, the
 * fallback after two 529s for the rest of the turn only, errors that are never retried, the
 * SDK's own retries off, side calls covered too, and Ctrl-C during a wait.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import type { CallFailure } from "shared";
import { apiError, reply, ScriptedModel, startFakeServer, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as RecoveryModule from "../chapters/s15-integrated/src/recovery.ts";
import { carried, chaptersFrom, edgeCase, importChapter, moduleVersions } from "./chapters.ts";
import {
  afterTools,
  lastMentions,
  lastToolResults,
  RETRY_AT_ONCE,
  runChapter,
  userSaid,
} from "./helpers/run.ts";

const RECOVERY = moduleVersions("s15", ["recovery.ts"]);
const overloaded = () =>
  apiError(529, "overloaded_error", "Overloaded", { headers: RETRY_AT_ONCE });
const models = (requests: Anthropic.MessageCreateParams[]) => requests.map((r) => r.model);

describe.each(RECOVERY)("$id recovery rules", (chapter) => {
  let recovery: typeof RecoveryModule;
  beforeAll(async () => {
    recovery = await importChapter<typeof RecoveryModule>(chapter, "recovery.ts");
  });

  it("retries 429, 529, 500, 502, 503, 504, no connection and a cut stream; nothing else", () => {
    const status = (code: number): CallFailure => ({
      kind: "status",
      status: code,
      retryAfterMs: null,
    });
    const retried = [429, 529, 500, 502, 503, 504].map((code) =>
      recovery.retryReason(status(code)),
    );
    expect(retried).toEqual([
      "rate limited (429)",
      "overloaded (529)",
      "server error (500)",
      "server error (502)",
      "server error (503)",
      "server error (504)",
    ]);
    for (const code of [400, 401, 403, 404, 413, 422, 501]) {
      expect(recovery.retryReason(status(code)), String(code)).toBeNull();
    }
    expect(recovery.retryReason({ kind: "connection" })).toBe("connection lost");
    expect(recovery.retryReason({ kind: "cut" })).toBe("the stream ended before the answer did");
    expect(recovery.retryReason({ kind: "aborted" })).toBeNull();
    expect(recovery.retryReason({ kind: "other" })).toBeNull();
  });

  it("waits min(500 * 2^k, 32 000) ms plus up to 25 % jitter, or retry-after up to 60 s", () => {
    const none = () => 0;
    const most = () => 1;
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((k) => recovery.retryDelayMs(k, null, none))).toEqual([
      500, 1000, 2000, 4000, 8000, 16000, 32000, 32000,
    ]);
    expect(recovery.retryDelayMs(0, null, most)).toBe(625);
    expect(recovery.retryDelayMs(6, null, most)).toBe(40000);
    expect(recovery.retryDelayMs(0, 1500, most)).toBe(1500);
    expect(recovery.retryDelayMs(2, 0, most)).toBe(0);
    expect(recovery.retryDelayMs(0, 120_000, most)).toBe(60_000);
  });
});

describe.concurrent.each(carried(chaptersFrom("s15"), RECOVERY))(
  "$id recovery through the chapter",
  (chapter) => {
    const edge = edgeCase(chapter, RECOVERY);

    it("retries a 529 three times on the same model, one dim line each, and answers", async () => {
      const server = await startFakeServer({
        model: new ScriptedModel([{ reply: reply(text("made it")) }]),
      });
      for (let i = 0; i < 3; i++) server.failNext(overloaded());
      try {
        const run = await runChapter(chapter, { prompts: ["go"], server });
        expect(run.code).toBe(0);
        expect(run.received).toHaveLength(4);
        expect(models(run.requests)).toEqual(Array(4).fill("claude-sonnet-4-6"));
        const retries = run.output.split("\n").filter((line) => line.startsWith("[retry]"));
        expect(retries).toEqual([
          "[retry] overloaded (529); attempt 2 of 4 in 0.0 s",
          "[retry] overloaded (529); attempt 3 of 4 in 0.0 s",
          "[retry] overloaded (529); attempt 4 of 4 in 0.0 s",
        ]);
        expect(run.output).toContain("made it");
        expect(run.output).not.toContain("[fallback]");
      } finally {
        await server.close();
      }
    });

    it("after two 529s in a row uses FALLBACK_MODEL_ID for the rest of the turn, then MODEL_ID again", async () => {
      const server = await startFakeServer({
        model: new ScriptedModel([
          { when: userSaid("first"), reply: reply(text("answered by the fallback")) },
          { when: userSaid("second"), reply: reply(text("back on the primary")) },
        ]),
      });
      server.failNext(overloaded());
      server.failNext(overloaded());
      try {
        const run = await runChapter(chapter, {
          prompts: ["first", "second"],
          server,
          env: { FALLBACK_MODEL_ID: "claude-fallback-1" },
        });
        expect(models(run.requests)).toEqual([
          "claude-sonnet-4-6",
          "claude-sonnet-4-6",
          "claude-fallback-1",
          "claude-sonnet-4-6",
        ]);
        expect(run.output).toContain(
          "[fallback] 2 overloaded answers in a row: the rest of this turn uses claude-fallback-1",
        );
        expect(run.output).toContain("answered by the fallback");
        expect(run.output).toContain("back on the primary");
      } finally {
        await server.close();
      }
    });

    it("gives up after four attempts: the error is reported once and the session goes on", async () => {
      const server = await startFakeServer({
        model: new ScriptedModel([{ when: userSaid("next"), reply: reply(text("still here")) }]),
      });
      for (let i = 0; i < 4; i++) {
        server.failNext(apiError(503, "api_error", "Unavailable", { headers: RETRY_AT_ONCE }));
      }
      try {
        const run = await runChapter(chapter, { prompts: ["go", "next"], server });
        expect(run.code).toBe(0);
        expect(run.received).toHaveLength(5);
        expect(run.output.match(/\[retry\]/g)).toHaveLength(3);
        expect(run.output).toContain("API error 503 api_error: Unavailable");
        expect(run.output).toContain("still here");
      } finally {
        await server.close();
      }
    });

    edge("never retries another 4xx, and the SDK's own retries are off", async () => {
      const server = await startFakeServer({
        model: new ScriptedModel([{ when: userSaid("second"), reply: reply(text("fine")) }]),
      });
      server.failNext(apiError(400, "invalid_request_error", "Bad request"));
      // The SDK would retry this one by itself (x-should-retry: true); here only the layer does.
      server.failNext(
        apiError(500, "api_error", "Internal", { retryable: true, headers: RETRY_AT_ONCE }),
      );
      try {
        const run = await runChapter(chapter, { prompts: ["first", "second"], server });
        expect(run.output).toContain("API error 400 invalid_request_error: Bad request");
        // "first": one request (400); "second": the 500, then its one retry.
        expect(run.received).toHaveLength(3);
        expect(run.output.match(/\[retry\] server error \(500\)/g)).toHaveLength(1);
      } finally {
        await server.close();
      }
    });

    edge(
      "retries a stream that breaks off and a side call's lost connection, naming its scope",
      async () => {
        const side = (r: Anthropic.MessageCreateParams) => (r.tools?.length ?? 0) === 0;
        const server = await startFakeServer({
          model: new ScriptedModel([
            { reply: { fault: "drop", afterEvents: 4 } },
            { reply: reply(text("the whole answer")) },
            { when: side, reply: { fault: "drop" } },
            { when: side, reply: reply(text("[]")) },
          ]),
        });
        try {
          const run = await runChapter(chapter, {
            prompts: ["go"],
            server,
            memoryExtraction: true,
          });
          expect(run.output).toContain(
            "This answer is cut off m\n[retry] the stream ended before the answer did; attempt 2 of 4 in ",
          );
          expect(run.output).toContain("the whole answer");
          expect(run.output).toContain("[retry] memory-extract: connection lost; attempt 2 of 4");
          expect(
            run.received.filter((r) => side(r.body as Anthropic.MessageCreateParams)),
          ).toHaveLength(2);
          // The main agent streams; a side call does not.
          expect(run.requests.map((r) => ("stream" in r ? r.stream : false))).toEqual([
            true,
            true,
            false,
            false,
          ]);
        } finally {
          await server.close();
        }
      },
    );

    it("redoes the first reply cut off at max_tokens with 16 000, and the next turn is back at 8 000", async () => {
      const cut = (r: ReturnType<typeof reply>) => ({ ...r, stop_reason: "max_tokens" as const });
      const run = await runChapter(chapter, {
        prompts: ["long", "short"],
        steps: [
          { when: userSaid("long"), reply: cut(reply(text("The first half"))) },
          { when: userSaid("long"), reply: reply(text("The whole answer.")) },
          { when: userSaid("short"), reply: reply(text("Short.")) },
        ],
      });
      expect(run.requests.map((r) => r.max_tokens)).toEqual([8000, 16000, 8000]);
      expect(run.output).toContain(
        "[max_tokens] the reply hit 8000 tokens: asking again with 16000",
      );
      // The cut-off reply was discarded: the next turn's history holds only the whole one.
      expect(run.requests[2]!.messages[1]).toEqual({
        role: "assistant",
        content: [expect.objectContaining({ type: "text", text: "The whole answer." })],
      });
    });

    it("a redone reply that fits puts the run's next call back on 8 000", async () => {
      const cut = (r: ReturnType<typeof reply>) => ({ ...r, stop_reason: "max_tokens" as const });
      const run = await runChapter(chapter, {
        prompts: ["work"],
        steps: [
          { reply: cut(reply(toolUse("bash", { command: "echo a" }))) },
          { reply: reply(toolUse("bash", { command: "echo a" })) },
          { when: afterTools, reply: reply(text("done")) },
        ],
      });
      expect(run.requests.map((r) => r.max_tokens)).toEqual([8000, 16000, 8000]);
    });

    edge(
      "keeps later cut-off replies: refuses their calls, then asks twice to continue",
      async () => {
        const cut = (r: ReturnType<typeof reply>) => ({ ...r, stop_reason: "max_tokens" as const });
        const run = await runChapter(chapter, {
          prompts: ["write it"],
          steps: [
            { reply: cut(reply(toolUse("bash", { command: "echo a" }))) },
            { reply: cut(reply(toolUse("bash", { command: "echo b" }, "toolu_big"))) },
            { when: afterTools, reply: cut(reply(text("part one"))) },
            { when: lastMentions("Continue exactly"), reply: cut(reply(text("part two"))) },
            { when: lastMentions("Continue exactly"), reply: cut(reply(text("part three"))) },
          ],
        });
        expect(run.requests.map((r) => r.max_tokens)).toEqual([8000, 16000, 16000, 16000, 16000]);
        expect(lastToolResults(run.requests[2]!)).toEqual([
          {
            type: "tool_result",
            tool_use_id: "toolu_big",
            content: expect.stringMatching(/^Error: your reply hit max_tokens .* smaller pieces/),
            is_error: true,
          },
        ]);
        expect(run.output).toContain(
          "[max_tokens] still cut off: asking the model to continue (1 of 2)",
        );
        expect(run.output).toContain(
          "[max_tokens] still cut off: asking the model to continue (2 of 2)",
        );
        // The third cut-off answer stands: no third continuation.
        expect(run.requests).toHaveLength(5);
        expect(run.output).toContain("part three\n[truncated: hit max_tokens]");
      },
    );

    it("refuses a cut-off reply's calls before the permission gate and the hooks see them", async () => {
      const cut = (r: ReturnType<typeof reply>) => ({ ...r, stop_reason: "max_tokens" as const });
      const run = await runChapter(chapter, {
        prompts: ["clean up"],
        files: {
          ".claude/settings.json": JSON.stringify({
            hooks: {
              PreToolUse: [
                { hooks: [{ type: "command", command: "cat >> hook.json; echo >> hook.json" }] },
              ],
            },
          }),
        },
        steps: [
          { reply: cut(reply(toolUse("bash", { command: "echo a" }))) },
          { reply: cut(reply(toolUse("bash", { command: "rm -rf buil" }, "toolu_cut"))) },
          { when: afterTools, reply: reply(text("resent")) },
        ],
      });
      expect(lastToolResults(run.requests[2]!)).toEqual([
        {
          type: "tool_result",
          tool_use_id: "toolu_cut",
          content: expect.stringMatching(/^Error: your reply hit max_tokens .* smaller pieces/),
          is_error: true,
        },
      ]);
      // Neither the approval gate nor a PreToolUse hook saw the half-written call.
      expect(run.output).not.toContain("[permission]");
      expect(existsSync(path.join(run.workdir, "hook.json"))).toBe(false);
    });

    edge("Ctrl-C during a wait ends the turn at once, with nothing left waiting", async () => {
      const server = await startFakeServer({ model: new ScriptedModel([]) });
      server.failNext(
        apiError(529, "overloaded_error", "Overloaded", { headers: { "retry-after": "30" } }),
      );
      let interrupt: (() => void) | undefined;
      try {
        const started = Date.now();
        const pending = runChapter(chapter, {
          prompts: ["go"],
          server,
          onSignal: (handler) => {
            interrupt = handler;
          },
          onOutput: (stdout) => {
            void stdout.waitFor("[retry]").then(() => interrupt?.());
          },
        });
        const run = await pending;
        expect(run.output).toContain("[retry] overloaded (529); attempt 2 of 4 in 30.0 s");
        expect(run.output).toContain("[interrupted]");
        expect(run.received).toHaveLength(1);
        expect(Date.now() - started).toBeLessThan(10_000);
      } finally {
        await server.close();
      }
    });
  },
);
