/**
 * The loop's named seams (DESIGN §7.2) and the prompt sections (§7.4), exercised now so
 * later chapters can rely on them. Runs `agentLoop` with the real SDK client against the
 * fake server, which rejects any malformed history.
 */

import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import {
  createAnthropic,
  createModelClient,
  createPrinter,
  type FakeServer,
  LineReader,
  type LoopEvent,
  nullLog,
  reply,
  ScriptedModel,
  type ScriptStep,
  startFakeServer,
  text,
  toolMap,
  toolUse,
  UsageMeter,
} from "shared";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type * as BashModule from "../chapters/s01-loop/src/bash.ts";
import type * as LoopModule from "../chapters/s01-loop/src/loop.ts";
import type * as PromptModule from "../chapters/s01-loop/src/prompt.ts";
import type * as ReplModule from "../chapters/s01-loop/src/repl.ts";
import { chaptersFrom, importChapter } from "./chapters.ts";
import { afterTools, Capture, lastToolResults, tempWorkspace } from "./helpers/run.ts";

type MessageParam = Anthropic.MessageParam;

describe.each(chaptersFrom("s01"))("$id loop seams", (chapter) => {
  let loop: typeof LoopModule;
  let bash: typeof BashModule;
  let prompt: typeof PromptModule;
  let server: FakeServer | null = null;

  beforeAll(async () => {
    loop = await importChapter<typeof LoopModule>(chapter, "loop.ts");
    bash = await importChapter<typeof BashModule>(chapter, "bash.ts");
    prompt = await importChapter<typeof PromptModule>(chapter, "prompt.ts");
  });
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  async function setup(steps: ScriptStep[], seams: LoopModule.LoopSeams, maxTurns?: number) {
    server = await startFakeServer({ model: new ScriptedModel(steps) });
    const usage = new UsageMeter();
    const client = createModelClient({
      anthropic: createAnthropic({ apiKey: "k", authToken: null, baseURL: server.url }),
      log: nullLog(),
      usage,
    });
    const events: LoopEvent[] = [];
    const messages: MessageParam[] = [{ role: "user", content: "start" }];
    const result = await loop.agentLoop(messages, {
      client,
      model: "m",
      tools: toolMap([bash.bashTool({ timeoutMs: 5000 })]),
      system: "sys",
      scope: "main",
      workdir: tempWorkspace("seams"),
      emit: (event) => events.push(event),
      seams,
      ...(maxTurns === undefined ? {} : { maxTurns }),
    });
    const requests = server.requests.map((r) => r.body as Anthropic.MessageCreateParams);
    expect(server.requests.every((r) => r.rejected === null)).toBe(true);
    return { messages, result, events, requests, usage };
  }

  const oneRound: ScriptStep[] = [
    { reply: reply(toolUse("bash", { command: "echo a" }, "toolu_1")) },
    { when: afterTools, reply: reply(text("end")) },
  ];

  it("afterResults blocks go after every tool_result of the same user message", async () => {
    const { requests } = await setup(oneRound, {
      afterResults: (results) => [{ type: "text", text: `<reminder>${results.length}</reminder>` }],
    });
    const last = requests[1]!.messages.at(-1)!;
    expect(last.content).toEqual([
      { type: "tool_result", tool_use_id: "toolu_1", content: "a" },
      { type: "text", text: "<reminder>1</reminder>" },
    ]);
  });

  it("beforeToolCall can refuse a call: its output replaces the run", async () => {
    const { requests } = await setup(oneRound, {
      beforeToolCall: async (call) => ({ content: `refused ${call.name}`, isError: true }),
    });
    expect(lastToolResults(requests[1]!)).toEqual([
      { type: "tool_result", tool_use_id: "toolu_1", content: "refused bash", is_error: true },
    ]);
  });

  it("afterToolCall can replace the output of a call that ran", async () => {
    const { requests } = await setup(oneRound, {
      afterToolCall: async (_call, output) => ({ content: `${output.content} + note` }),
    });
    expect(lastToolResults(requests[1]!)[0]?.content).toBe("a + note");
  });

  it("a throwing seam becomes an is_error result, never an exception", async () => {
    const { requests } = await setup(oneRound, {
      beforeToolCall: async () => {
        throw new Error("hook exploded");
      },
    });
    expect(lastToolResults(requests[1]!)[0]).toMatchObject({
      content: "Error: hook exploded",
      is_error: true,
    });
  });

  it("beforeModelCall runs before every call and may rewrite the history", async () => {
    const seen: number[] = [];
    const { requests } = await setup(oneRound, {
      beforeModelCall: async (messages) => {
        seen.push(messages.length);
        if (messages.length === 1) messages[0] = { role: "user", content: "rewritten" };
      },
    });
    expect(seen).toEqual([1, 3]);
    expect(requests[0]!.messages[0]).toEqual({ role: "user", content: "rewritten" });
  });

  it("aroundModelCall wraps each call (a retry layer can call it twice)", async () => {
    let wrapped = 0;
    const { requests } = await setup(
      [{ reply: reply(text("first try")) }, { reply: reply(text("second try")) }],
      {
        aroundModelCall: async (call) => {
          wrapped++;
          await call();
          return call();
        },
      },
    );
    expect(wrapped).toBe(1);
    expect(requests).toHaveLength(2);
  });

  it("onStop can continue the loop once with a new user message; afterBatch and onAppend see every step", async () => {
    let stops = 0;
    const batches: number[] = [];
    const appended: string[] = [];
    const { messages, requests } = await setup(
      [
        ...oneRound,
        { when: (r) => r.messages.at(-1)?.content === "keep going", reply: reply(text("more")) },
      ],
      {
        onStop: async () => (stops++ === 0 ? "keep going" : null),
        afterBatch: async (history) => {
          batches.push(history.length);
        },
        onAppend: (message) => appended.push(message.role),
      },
    );
    expect(requests).toHaveLength(3);
    expect(batches).toEqual([3]);
    expect(appended).toEqual(["assistant", "user", "assistant", "user", "assistant"]);
    expect(messages.at(-1)).toMatchObject({ role: "assistant" });
  });

  it("stops at maxTurns model calls and says so", async () => {
    const { result, requests } = await setup(
      [
        { reply: reply(toolUse("bash", { command: "echo 1" })) },
        { reply: reply(toolUse("bash", { command: "echo 2" })) },
        { reply: reply(toolUse("bash", { command: "echo 3" })) },
      ],
      {},
      2,
    );
    expect(result.stopped).toBe("max_turns");
    expect(result.turns).toBe(2);
    expect(requests).toHaveLength(2);
  });

  it("emits tool_call and tool_result events with the scope and a duration", async () => {
    const { events } = await setup(oneRound, {});
    const kinds = events.map((e) => e.type);
    expect(kinds).toEqual(["tool_call", "tool_result"]);
    expect(events[1]).toMatchObject({ scope: "main", name: "bash", content: "a", isError: false });
  });

  it("builds the system prompt from sections, dynamic ones last", () => {
    const built = prompt.buildSystemPrompt([
      { id: "identity", text: "I" },
      { id: "time", text: "T", dynamic: true },
      { id: "shell", text: "S" },
    ]);
    expect(built).toBe("I\n\nS\n\nT");
    expect(prompt.identitySection("/ws")).toEqual({
      id: "identity",
      text: "You are a coding agent at /ws. Use tools to solve tasks. Act, don't explain.",
    });
    expect(bash.shellSection("/ws").text).toBe(
      "Shell: bash runs one command in /ws and returns its output; run commands rather than guessing.",
    );
  });

  it("the REPL's prepareLine seam can rewrite a line or drop it before it joins the history", async () => {
    const repl = await importChapter<typeof ReplModule>(chapter, "repl.ts");
    const input = new PassThrough();
    const output = new Capture();
    const printer = createPrinter(output, false);
    const reader = new LineReader({ input, output, printer });
    const history: MessageParam[] = [];
    const seen: unknown[] = [];
    input.end("keep\ndrop\n");
    await repl.runRepl({
      prompt: "> ",
      reader,
      printer,
      usage: new UsageMeter(),
      log: nullLog(),
      model: "m",
      history,
      prepareLine: async (line) =>
        line === "drop"
          ? null
          : [
              { type: "text", text: line },
              { type: "text", text: "ctx" },
            ],
      runTurn: async (messages) => {
        seen.push(structuredClone(messages));
        messages.push({ role: "assistant", content: "ok" });
        return {
          response: { content: [{ type: "text", text: "ok" }], stop_reason: "end_turn" },
          turns: 1,
          stopped: "done",
        } as unknown as LoopModule.LoopResult;
      },
    });
    expect(seen).toEqual([
      [
        {
          role: "user",
          content: [
            { type: "text", text: "keep" },
            { type: "text", text: "ctx" },
          ],
        },
      ],
    ]);
    expect(history).toHaveLength(2);
  });

  it("textOf gives placeholders when there is no text", () => {
    const message = (stop: Anthropic.StopReason, content: Anthropic.ContentBlock[] = []) =>
      ({ content, stop_reason: stop }) as unknown as Anthropic.Message;
    expect(loop.textOf(message("end_turn"))).toBe("[no text in response]");
    expect(loop.textOf(message("refusal"))).toBe("[model declined to respond]");
    expect(loop.textOf(message("pause_turn"))).toBe("[paused mid-turn]");
    expect(loop.textOf(message("max_tokens"))).toBe(
      "[no output: hit max_tokens before the model produced any text]",
    );
  });
});
