/**
 * The agent loop and the REPL, through each chapter's real `main` against the fake API.
 * Runs against every chapter from s01.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import {
  apiError,
  reply,
  ScriptedModel,
  startFakeServer,
  text,
  thinking,
  toolUse,
} from "shared/testing";
import { describe, expect, it } from "vitest";
import {
  attemptsPerCall,
  carried,
  casesFor,
  chaptersFrom,
  edgeCase,
  moduleVersions,
  runsEdgeCases,
} from "./chapters.ts";
import {
  afterTools,
  everyAttempt,
  interruptDuringSleep,
  lastMentions,
  lastToolResults,
  runChapter,
  SLEEP_30,
  sessionLog,
  userSaid,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;

/** A command that sleeps 30 s in the background of its shell, its pid in sleep.pid. */

// Edge cases (and every parameter case) run where these modules differ and on the newest
// chapter; the rest of the suite runs on every chapter (runsEdgeCases in chapters.ts).
const LOOP = moduleVersions("s01", ["loop.ts", "repl.ts", "harness.ts"]);
const BASH = moduleVersions("s01", ["bash.ts"]);

// Each test runs its own chapter, workspace and server, so a chapter's tests wait side by
// side (the SDK's retry backoff, the fake server). Ctrl-C kills every child of the process,
// so that test runs on its own, below.
describe.concurrent.each(carried(chaptersFrom("s01"), LOOP, BASH))(
  "$id loop and REPL",
  (chapter) => {
    const edge = edgeCase(chapter, LOOP);
    it("answers a text-only reply in one request with the system prompt, bash and max_tokens 8000", async () => {
      const run = await runChapter(chapter, {
        prompts: ["hello"],
        steps: [{ reply: reply(text("Hi there.")) }],
      });
      expect(run.code).toBe(0);
      expect(run.requests).toHaveLength(1);
      const [request] = run.requests as [Request];
      expect(request.max_tokens).toBe(8000);
      expect(request.messages).toEqual([{ role: "user", content: "hello" }]);
      expect(request.system).toMatch(
        new RegExp(`^You are a coding agent at ${run.workdir}\\. Use tools to solve tasks\\.`),
      );
      expect((request.tools as Anthropic.Tool[])[0]?.name).toBe("bash");
      expect(run.output).toContain("Hi there.");
      // From s15 the line also shows what the prompt cache read and wrote.
      expect(run.output).toMatch(/\[usage\] in \d+ \/ out \d+ tokens(, cache \w+ \d+)* \(1 call\)/);
    });

    it("runs a tool round, sends the real output back with the matching id, then stops", async () => {
      const run = await runChapter(chapter, {
        prompts: ["say hi"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo hi" }, "toolu_one")) },
          { when: afterTools, reply: reply(text("done")) },
        ],
      });
      expect(run.requests).toHaveLength(2);
      const second = run.requests[1]!;
      expect(second.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(lastToolResults(second)).toEqual([
        { type: "tool_result", tool_use_id: "toolu_one", content: "hi" },
      ]);
      expect(run.output).toContain('> bash({"command":"echo hi"})');
    });

    edge("answers two tool calls of one reply in one user message, in call order", async () => {
      const run = await runChapter(chapter, {
        prompts: ["two"],
        steps: [
          {
            reply: reply(
              text("Two at once."),
              toolUse("bash", { command: "echo first" }, "toolu_a"),
              toolUse("bash", { command: "echo second" }, "toolu_b"),
            ),
          },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      const results = lastToolResults(run.requests[1]!);
      expect(results.map((r) => [r.tool_use_id, r.content])).toEqual([
        ["toolu_a", "first"],
        ["toolu_b", "second"],
      ]);
      // The text that came with the calls is kept in the stored assistant message.
      const assistant = run.requests[1]!.messages[1]!;
      expect(Array.isArray(assistant.content) && assistant.content[0]).toMatchObject({
        type: "text",
        text: "Two at once.",
      });
      expect(run.output.indexOf("Two at once.")).toBeLessThan(run.output.indexOf("echo first"));
    });

    // Dispatch and input checks are loop.ts's and bash.ts's own: edge cases, every case.
    const only = <T>(modules: typeof LOOP, cases: T[]) =>
      runsEdgeCases(chapter, modules) ? cases : [];
    it.each(only(LOOP, ["no_such_tool", "constructor", "__proto__", "toString"]))(
      "turns the unknown tool name %s into an is_error result and goes on",
      async (name) => {
        const run = await runChapter(chapter, {
          prompts: ["go"],
          steps: [
            { reply: reply(toolUse(name, {})) },
            { when: afterTools, reply: reply(text("recovered")) },
          ],
        });
        const [result] = lastToolResults(run.requests[1]!);
        expect(result?.is_error).toBe(true);
        expect(result?.content).toMatch(
          new RegExp(`^Error: Unknown tool '${name}'\\. Available tools: bash`),
        );
        expect(run.output).toContain("recovered");
      },
    );

    it.each(
      only(BASH, [
        [{}, "Error: Invalid input for bash: command is required"],
        [{ command: 42 }, "Error: Invalid input for bash: command must be a string"],
        [{ cmd: "ls" }, "Error: Invalid input for bash: command is required"],
      ] as Array<[Record<string, unknown>, string]>),
    )("rejects bad bash input %j without running anything", async (input, message) => {
      const run = await runChapter(chapter, {
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", input)) },
          { when: afterTools, reply: reply(text("fine")) },
        ],
      });
      expect(lastToolResults(run.requests[1]!)).toEqual([
        expect.objectContaining({ content: message, is_error: true }),
      ]);
    });

    edge("decides the end of a turn by tool_use blocks, not by stop_reason", async () => {
      const run = await runChapter(chapter, {
        prompts: ["go"],
        steps: [
          // end_turn with a tool_use block: the loop must still run it and continue.
          { reply: { ...reply(toolUse("bash", { command: "echo x" })), stop_reason: "end_turn" } },
          // tool_use stop_reason without a block: the loop must stop.
          { when: afterTools, reply: { ...reply(text("stopped")), stop_reason: "tool_use" } },
        ],
      });
      expect(run.requests).toHaveLength(2);
      expect(run.output).toContain("stopped");
    });

    edge("sends thinking blocks back exactly as received", async () => {
      const run = await runChapter(chapter, {
        prompts: ["think"],
        steps: [
          {
            reply: reply(
              { type: "thinking", thinking: "Let me check.", signature: "sig-123" },
              toolUse("bash", { command: "echo t" }),
            ),
          },
          { when: afterTools, reply: reply(thinking("Done thinking."), text("answer")) },
        ],
      });
      const assistant = run.requests[1]!.messages[1]!;
      expect(assistant.content).toEqual([
        { type: "thinking", thinking: "Let me check.", signature: "sig-123" },
        expect.objectContaining({ type: "tool_use", name: "bash" }),
      ]);
      expect(run.output).toContain("(thinking) Let me check.");
    });

    edge("prints a placeholder when the reply hits max_tokens", async () => {
      // From s15 a cut-off answer stands only after a redo and two continuations.
      const stands = chaptersFrom("s01", "the first reply cut off at max_tokens is the answer");
      const cut = { ...reply(text("partial")), stop_reason: "max_tokens" as const };
      const run = await runChapter(chapter, {
        prompts: ["long"],
        steps: Array.from({ length: stands.includes(chapter) ? 1 : 4 }, () => ({ reply: cut })),
      });
      expect(run.output).toContain("partial\n[truncated: hit max_tokens]");
    });

    it("survives an API error mid-turn: one red line, history restored, next request valid", async () => {
      const run = await runChapter(chapter, {
        prompts: ["first", "second"],
        steps: [
          { when: userSaid("first"), reply: reply(toolUse("bash", { command: "echo a" })) },
          ...everyAttempt(chapter, apiError(500, "api_error", "Internal server error")).map(
            (fault) => ({ when: afterTools, reply: fault }),
          ),
          { when: userSaid("second"), reply: reply(text("second answer")) },
        ],
      });
      expect(run.code).toBe(0);
      expect(run.output).toContain("API error 500 api_error: Internal server error");
      expect(run.output).toContain("this turn was discarded");
      expect(run.output).toContain("second answer");
      // The fake server rejects any malformed history, so acceptance proves the rollback.
      expect(run.received.every((r) => r.rejected === null)).toBe(true);
      expect(run.requests.at(-1)!.messages).toEqual([{ role: "user", content: "second" }]);
    });

    edge("lets the SDK retry an overloaded (529) answer without bothering the user", async () => {
      const run = await runChapter(chapter, {
        prompts: ["hi"],
        steps: [
          {
            reply: apiError(529, "overloaded_error", "Overloaded", {
              retryable: true,
              headers: { "retry-after-ms": "1" },
            }),
          },
          { reply: reply(text("after the retry")) },
        ],
      });
      expect(run.received).toHaveLength(2);
      expect(run.output).toContain("after the retry");
      expect(run.output).not.toContain("API error");
    });

    edge(
      "reports a rate limit (429) that must not be retried and keeps the REPL going",
      async () => {
        const run = await runChapter(chapter, {
          prompts: ["one", "two"],
          steps: [
            ...everyAttempt(
              chapter,
              apiError(429, "rate_limit_error", "Number of requests has exceeded your rate limit"),
            ).map((fault) => ({ when: userSaid("one"), reply: fault })),
            { when: userSaid("two"), reply: reply(text("two ok")) },
          ],
        });
        expect(run.output).toContain("API error 429 rate_limit_error: Number of requests");
        expect(run.output).toContain("two ok");
      },
    );

    edge("names MODEL_ID when the endpoint rejects the model", async () => {
      const run = await runChapter(chapter, {
        prompts: ["hi"],
        steps: [{ reply: apiError(404, "not_found_error", "model: no-such-model") }],
        env: { MODEL_ID: "no-such-model" },
      });
      expect(run.output).toContain("set MODEL_ID to a model it serves");
      expect(run.requests[0]!.model).toBe("no-such-model");
    });

    edge("queues several piped lines and answers each in order", async () => {
      const run = await runChapter(chapter, {
        prompts: ["one", "two", "three"],
        steps: ["one", "two", "three"].map((line) => ({
          when: userSaid(line),
          reply: reply(text(`answer ${line}`)),
        })),
      });
      expect(run.requests).toHaveLength(3);
      const order = ["answer one", "answer two", "answer three"].map((a) => run.output.indexOf(a));
      expect(order.every((at) => at >= 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      // History carries across lines.
      expect(run.requests[2]!.messages).toHaveLength(5);
    });

    edge(
      "skips blank lines, handles unknown slash commands locally and quits on `quit`",
      async () => {
        const run = await runChapter(chapter, {
          prompts: ["", "   ", "/nope", "real question", "QUIT", "never sent"],
          steps: [{ reply: reply(text("only answer")) }],
        });
        expect(run.code).toBe(0);
        expect(run.requests).toHaveLength(1);
        expect(run.requests[0]!.messages).toEqual([{ role: "user", content: "real question" }]);
        expect(run.output).toContain("Unknown command /nope");
        expect(run.output).not.toContain("never sent\n[");
      },
    );

    it.each(casesFor(chapter, ["q", "exit", " Exit "], LOOP))(
      "ends with status 0 on %j",
      async (word) => {
        const run = await runChapter(chapter, { prompts: [word, "after"], steps: [] });
        expect(run.code).toBe(0);
        expect(run.requests).toHaveLength(0);
      },
    );

    edge("carries Chinese and Japanese text both ways", async () => {
      const run = await runChapter(chapter, {
        prompts: ["列出文件。ファイルを表示して"],
        steps: [
          { reply: reply(toolUse("bash", { command: "printf '你好，世界 こんにちは'" })) },
          { when: afterTools, reply: reply(text("完成しました：你好")) },
        ],
      });
      expect(run.requests[0]!.messages[0]).toEqual({
        role: "user",
        content: "列出文件。ファイルを表示して",
      });
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe("你好，世界 こんにちは");
      expect(run.output).toContain("完成しました：你好");
    });

    edge(
      "writes the session log under .harness/logs with the API key redacted, even from tool output",
      async () => {
        const key = "sk-secret-test-key-123";
        const run = await runChapter(chapter, {
          prompts: ["log me"],
          steps: [
            // The key reaches the tool_use input and the tool result: only redaction keeps it out.
            { reply: reply(toolUse("bash", { command: `echo logged ${key}` })) },
            { when: afterTools, reply: reply(text("logged it")) },
          ],
          env: { ANTHROPIC_API_KEY: key },
        });
        const { files, api: raw, transcript } = sessionLog(run.workdir);
        expect(files).toHaveLength(2);
        expect(files[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}_\d+_api\.jsonl$/);
        expect(files[1]).toMatch(/_transcript\.log$/);
        const kinds = raw
          .trim()
          .split("\n")
          .map((line) => (JSON.parse(line) as { kind: string }).kind);
        expect(kinds[0]).toBe("config");
        expect(kinds.filter((kind) => kind === "request" || kind === "response")).toEqual([
          "request",
          "response",
          "request",
          "response",
        ]);
        expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(`logged ${key}`);
        expect(transcript).toContain("TOOL RESULT bash");
        expect(transcript).toContain("logged it");
        expect(raw.includes(key), "the API key is in *_api.jsonl").toBe(false);
        expect(transcript.includes(key), "the API key is in *_transcript.log").toBe(false);
        expect(raw).toContain("logged [redacted]");
        expect(transcript).toContain("logged [redacted]");
        expect(readFileSync(path.join(run.workdir, ".harness", ".gitignore"), "utf8")).toBe("*\n");
      },
    );

    edge(
      "redacts ANTHROPIC_AUTH_TOKEN (no API key set) from both session log files, even from tool output",
      async () => {
        const token = "tok-secret-auth-token-456";
        const run = await runChapter(chapter, {
          prompts: ["show the token"],
          steps: [
            { reply: reply(toolUse("bash", { command: `echo token ${token}` })) },
            { when: afterTools, reply: reply(text("shown")) },
          ],
          env: { ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: token },
        });
        expect(run.received[0]?.headers.authorization).toBe(`Bearer ${token}`);
        expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(`token ${token}`);
        const { api, transcript } = sessionLog(run.workdir);
        expect(api.includes(token), "the auth token is in *_api.jsonl").toBe(false);
        expect(transcript.includes(token), "the auth token is in *_transcript.log").toBe(false);
        expect(api).toContain("token [redacted]");
        expect(transcript).toContain("token [redacted]");
      },
    );
  },
);

describe.each(carried(chaptersFrom("s01"), LOOP))("$id Ctrl-C", (chapter) => {
  const ends = chaptersFrom("s01", "Ctrl-C during a turn ends the session").includes(chapter);
  it(
    ends
      ? "on Ctrl-C during a turn kills the running command, prints Interrupted. and ends the session with 0"
      : "on Ctrl-C during a turn kills the running command, keeps the turn repaired and goes on to the next line",
    async () => {
      // From s15 the next line joins the repaired message: matched by its text, not its whole.
      const { run, sleepEnded } = await interruptDuringSleep(chapter, {
        prompts: ["wait", "after the interrupt"],
        steps: [
          {
            when: userSaid("wait"),
            reply: reply(toolUse("bash", { command: SLEEP_30 }, "toolu_w")),
          },
          { when: lastMentions("after the interrupt"), reply: reply(text("still going")) },
          { when: afterTools, reply: reply(text("the command finished")) },
        ],
      });
      expect(run.code).toBe(0);
      expect(run.output).not.toContain("the command finished");
      expect(sleepEnded, "the command's sleep still runs").toBe(true);
      if (ends) {
        expect(run.output).toContain("Interrupted.");
        expect(run.requests).toHaveLength(1);
        return;
      }
      expect(run.output).toContain("[interrupted]");
      expect(run.output).toContain("still going");
      // The next request is valid: every call answered, the note, then the new line.
      expect(run.received.map((r) => r.rejected)).toEqual([null, null]);
      expect(run.requests[1]!.messages.slice(2)).toEqual([
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_w",
              content: "Interrupted by the user",
              is_error: true,
            },
            { type: "text", text: "[Interrupted by the user]" },
            { type: "text", text: "after the interrupt" },
          ],
        },
      ]);
    },
  );
});

// bash.ts reads BASH_TIMEOUT_MS when the chapter starts (here, not in bash.test.ts, so the
// chapters are loaded once). Each run waits out a 500 ms timeout; the chapters wait side by side.
describe.concurrent("BASH_TIMEOUT_MS through the chapter", () => {
  it.for(chaptersFrom("s01").filter((chapter) => runsEdgeCases(chapter, BASH)))(
    "$id takes the bash timeout from BASH_TIMEOUT_MS: 500 ms stops `sleep 5` with Error: Timeout (1s)",
    async (chapter, { expect }) => {
      const started = Date.now();
      const run = await runChapter(chapter, {
        prompts: ["wait"],
        env: { BASH_TIMEOUT_MS: "500" },
        steps: [
          { reply: reply(toolUse("bash", { command: "sleep 5" })) },
          { when: afterTools, reply: reply(text("timed out")) },
        ],
      });
      expect(lastToolResults(run.requests[1]!)[0]).toMatchObject({
        content: "Error: Timeout (1s)",
        is_error: true,
      });
      expect(Date.now() - started).toBeLessThan(4000);
    },
  );
});

describe.each(carried(chaptersFrom("s01"), LOOP, BASH))(
  "$id BASH_TIMEOUT_MS validation",
  (chapter) => {
    it.each(casesFor(chapter, ["abc", "0", "-1", "1.5"], BASH))(
      "rejects BASH_TIMEOUT_MS=%j as a configuration error with status 1, before the REPL starts",
      async (value) => {
        const run = await runChapter(chapter, {
          prompts: ["hi"],
          env: { BASH_TIMEOUT_MS: value },
          steps: [{ reply: reply(text("should not be asked")) }],
        });
        expect(run.code).toBe(1);
        expect(run.output).toBe(
          `${chapter.id}: configuration error: BASH_TIMEOUT_MS must be a positive integer (got '${value}')\n`,
        );
        expect(run.received).toHaveLength(0);
      },
    );
  },
);

// The SDK's retry backoff makes this test wait ~2 s; the chapters wait side by side.
describe.concurrent("dropped connections", () => {
  it.for(chaptersFrom("s01").filter((chapter) => runsEdgeCases(chapter, LOOP)))(
    "$id survives dropped connections: retried, reported when they persist",
    async (chapter, { expect }) => {
      const server = await startFakeServer({
        model: new ScriptedModel([
          { when: userSaid("flaky"), reply: reply(text("made it")) },
          { when: userSaid("dead"), reply: reply(text("never")) },
        ]),
      });
      server.failNext({ fault: "drop" }); // "flaky": dropped once, the SDK's retry succeeds
      try {
        const first = await runChapter(chapter, { prompts: ["flaky"], server });
        expect(first.output).toContain("made it");
        // Every try of "dead": the SDK's three, or from s15 the recovery layer's four.
        const tries = attemptsPerCall(chapter) === 1 ? 3 : attemptsPerCall(chapter);
        for (let i = 0; i < tries; i++) server.failNext({ fault: "drop" });
        const second = await runChapter(chapter, { prompts: ["dead"], server });
        expect(second.output).toMatch(/connection error: .*this turn was discarded/);
        expect(second.code).toBe(0);
      } finally {
        await server.close();
      }
    },
  );
});
