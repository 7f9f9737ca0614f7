/**
 * The loop's seams and the rules that join several mechanisms on one seam (loop.ts), the
 * REPL's turn lifecycle and event sources (repl.ts), and the prompt sections, exercised
 * from s01 on so later chapters can rely on them. `agentLoop` runs with the real SDK
 * client against the fake server, which rejects any malformed history.
 */

import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import {
  createAnthropic,
  createModelClient,
  createPrinter,
  LineReader,
  type LoopEvent,
  type ModelClient,
  nullLog,
  type ToolDefinition,
  toolMap,
  UsageMeter,
} from "shared";
import {
  type FakeServer,
  reply,
  ScriptedModel,
  type ScriptStep,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type * as BashModule from "../chapters/s01-loop/src/bash.ts";
import type * as HarnessModule from "../chapters/s01-loop/src/harness.ts";
import type * as LoopModule from "../chapters/s01-loop/src/loop.ts";
import type * as PromptModule from "../chapters/s01-loop/src/prompt.ts";
import type * as ReplModule from "../chapters/s01-loop/src/repl.ts";
import type * as ContractModule from "../chapters/s17-goal/src/contract.ts";
import { chaptersFrom, hasContract, importChapter, moduleVersions } from "./chapters.ts";
import { afterTools, Capture, lastToolResults, tempWorkspace } from "./helpers/run.ts";

type MessageParam = Anthropic.MessageParam;
type Seams = ContractModule.LoopSeams;

// The run's context is the loop's to write; to a mechanism it is read-only. tsc checks this
// (pnpm typecheck): were a field writable, the expected error would be missing.
function mechanismsCannotWrite(run: ContractModule.RunContext, first: FirstContext): void {
  // @ts-expect-error a mechanism cannot move the run's working directory
  run.workdir = "/elsewhere";
  // @ts-expect-error nor replace the run's tools
  run.tools = new Map();
  // @ts-expect-error nor the system prompt, in the first chapter either
  first.system = "";
}
type FirstContext = import("../chapters/s01-loop/src/contract.ts").RunContext;
void mechanismsCannotWrite;

describe.each(
  moduleVersions("s01", [
    "contract.ts",
    "loop.ts",
    "bash.ts",
    "prompt.ts",
    "repl.ts",
    "harness.ts",
  ]),
)("$id loop seams", (chapter) => {
  let loop: typeof LoopModule;
  let contract: typeof ContractModule;
  let bash: typeof BashModule;
  let prompt: typeof PromptModule;
  let repl: typeof ReplModule;
  let harness: typeof HarnessModule;
  let server: FakeServer | null = null;

  beforeAll(async () => {
    loop = await importChapter<typeof LoopModule>(chapter, "loop.ts");
    contract = await importChapter<typeof ContractModule>(chapter, "contract.ts");
    bash = await importChapter<typeof BashModule>(chapter, "bash.ts");
    prompt = await importChapter<typeof PromptModule>(chapter, "prompt.ts");
    repl = await importChapter<typeof ReplModule>(chapter, "repl.ts");
    harness = await importChapter<typeof HarnessModule>(chapter, "harness.ts");
  });
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  async function setup(steps: ScriptStep[], seams: Seams[], maxTurns?: number) {
    server = await startFakeServer({ model: new ScriptedModel(steps) });
    const client = createModelClient({
      anthropic: createAnthropic({ apiKey: "k", authToken: null, baseURL: server.url }),
      log: nullLog(),
      usage: new UsageMeter(),
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
    return { messages, result, events, requests };
  }

  const oneRound: ScriptStep[] = [
    { reply: reply(toolUse("bash", { command: "echo a" }, "toolu_1")) },
    { when: afterTools, reply: reply(text("end")) },
  ];
  const reminder = (tag: string): Seams => ({
    afterResults: () => [{ type: "text", text: `<${tag}/>` }],
  });

  describe("one rule per seam, with two mechanisms on it", () => {
    it("beforeModelCall: both run before every call, in list order", async () => {
      const seen: string[] = [];
      const rewrite = (tag: string): Seams => ({
        beforeModelCall: async (messages) => {
          seen.push(`${tag}:${messages.length}`);
          if (messages.length === 1) messages[0] = { role: "user", content: `${tag}-rewritten` };
        },
      });
      const { requests } = await setup(oneRound, [rewrite("a"), rewrite("b")]);
      expect(seen).toEqual(["a:1", "b:1", "a:3", "b:3"]);
      // b ran after a and saw a's rewrite, so b's text is what the model got.
      expect(requests[0]!.messages[0]).toEqual({ role: "user", content: "b-rewritten" });
    });

    it("aroundModelCall: wrappers nest in list order, the first outermost", async () => {
      const trace: string[] = [];
      const wrap = (tag: string): Seams => ({
        aroundModelCall: async (next) => {
          trace.push(`${tag} in`);
          const message = await next();
          trace.push(`${tag} out`);
          return message;
        },
      });
      await setup([{ reply: reply(text("hi")) }], [wrap("outer"), wrap("inner")]);
      expect(trace).toEqual(["outer in", "inner in", "inner out", "outer out"]);
    });

    it("aroundModelCall: an outer wrapper calling next twice runs the inner one twice", async () => {
      let inner = 0;
      const { requests } = await setup(
        [{ reply: reply(text("first try")) }, { reply: reply(text("second try")) }],
        [
          {
            aroundModelCall: async (next) => {
              await next();
              return next();
            },
          },
          {
            aroundModelCall: (next) => {
              inner++;
              return next();
            },
          },
        ],
      );
      expect(inner).toBe(2);
      expect(requests).toHaveLength(2);
    });

    if (hasContract(chapter, "type", "CallOverrides")) {
      it("aroundModelCall: overrides given to next merge inward, the wrapper nearest the call winning, for that call only", async () => {
        const pass = (overrides: { maxTokens?: number }): Seams => ({
          aroundModelCall: (next) => next(overrides),
        });
        const limits = async (list: Seams[], replies = 1) => {
          const steps = Array.from({ length: replies }, () => ({ reply: reply(text("hi")) }));
          const { requests } = await setup(steps, list);
          return requests.map((r) => r.max_tokens);
        };
        expect(await limits([pass({ maxTokens: 100 }), pass({})])).toEqual([100]);
        expect(await limits([pass({ maxTokens: 100 }), pass({ maxTokens: 200 })])).toEqual([200]);
        const again: Seams = {
          aroundModelCall: async (next) => {
            await next({ maxTokens: 100 });
            return next();
          },
        };
        expect(await limits([again], 2)).toEqual([100, loop.MAX_TOKENS]);
      });
    }

    it("beforeToolCall: the first refusal wins and the later gates never see the call", async () => {
      const asked: string[] = [];
      const gate = (tag: string, refuse: boolean): Seams => ({
        beforeToolCall: async (call) => {
          asked.push(tag);
          return refuse ? { content: `${tag} refused ${call.name}`, isError: true } : null;
        },
      });
      const { requests } = await setup(oneRound, [
        gate("a", false),
        gate("b", true),
        gate("c", true),
      ]);
      expect(asked).toEqual(["a", "b"]);
      expect(lastToolResults(requests[1]!)).toEqual([
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: "b refused bash",
          is_error: true,
        },
      ]);
    });

    if (hasContract(chapter, "seam", "reviewToolCall")) {
      it("reviewToolCall: each gets the call the last handed on, before any gate; a refusal ends the review, a halt the run", async () => {
        const seen: string[] = [];
        const { requests, result } = await setup(
          [
            {
              reply: reply(
                toolUse("bash", { command: "echo a" }, "toolu_1"),
                toolUse("bash", { command: "echo b" }, "toolu_2"),
              ),
            },
          ],
          [
            {
              beforeToolCall: async (call) => {
                seen.push(`gate ${JSON.stringify(call.input)} ${call.verdict?.decision}`);
                return null;
              },
            },
            {
              reviewToolCall: async (call) => {
                seen.push(`first ${JSON.stringify(call.input)}`);
                if (call.id === "toolu_2")
                  return { refuse: { content: "no", isError: true, halt: "enough" } };
                return {
                  call: {
                    ...call,
                    input: { command: "echo c" },
                    verdict: { decision: "allow", by: "t" },
                  },
                };
              },
            },
            {
              reviewToolCall: async (call) => {
                seen.push(`second ${JSON.stringify(call.input)}`);
                return { call };
              },
            },
          ],
        );
        expect(seen).toEqual([
          'first {"command":"echo a"}',
          'second {"command":"echo c"}',
          'gate {"command":"echo c"} allow',
          'first {"command":"echo b"}',
        ]);
        // The halt ends the run after the round: no second model call.
        expect(requests).toHaveLength(1);
        expect(result.stopped).toBe("halted");
      });
    }

    it("afterToolCall: each gets the output the previous one returned", async () => {
      const note = (tag: string): Seams => ({
        afterToolCall: async (_call, output) => ({ content: `${output.content}+${tag}` }),
      });
      const { requests } = await setup(oneRound, [note("a"), note("b")]);
      expect(lastToolResults(requests[1]!)[0]?.content).toBe("a+a+b");
    });

    it("afterResults: the blocks of both follow every tool_result, in list order", async () => {
      const { requests } = await setup(oneRound, [reminder("first"), reminder("second")]);
      expect(requests[1]!.messages.at(-1)!.content).toEqual([
        { type: "tool_result", tool_use_id: "toolu_1", content: "a" },
        { type: "text", text: "<first/>" },
        { type: "text", text: "<second/>" },
      ]);
    });

    it("afterBatch: both run after the results message was appended, in list order", async () => {
      const seen: string[] = [];
      const batch = (tag: string): Seams => ({
        afterBatch: async (messages) => {
          seen.push(`${tag}:${messages.length}:${messages.at(-1)?.role}`);
        },
      });
      await setup(oneRound, [batch("a"), batch("b")]);
      expect(seen).toEqual(["a:3:user", "b:3:user"]);
    });

    it("onStop: the first answer continues the loop and the later ones are not asked", async () => {
      const asked: string[] = [];
      let answered = false;
      let thirdAnswered = false;
      const stop = (tag: string, answer: () => string | null): Seams => ({
        onStop: async () => {
          asked.push(tag);
          return answer();
        },
      });
      const { messages, requests } = await setup(
        [
          { when: (r) => r.messages.length === 1, reply: reply(text("done?")) },
          {
            when: (r) => r.messages.at(-1)?.content === "keep going",
            reply: reply(text("more")),
          },
          { when: (r) => r.messages.at(-1)?.content === "not me", reply: reply(text("fine")) },
        ],
        [
          stop("silent", () => null),
          stop("answers", () => {
            if (answered) return null;
            answered = true;
            return "keep going";
          }),
          stop("never asked first time", () => {
            if (thirdAnswered) return null;
            thirdAnswered = true;
            return "not me";
          }),
        ],
      );
      // First stop: "silent" passes, "answers" continues; the third is not asked.
      // Second stop: "silent" and "answers" pass, so the third's answer would count.
      expect(asked.slice(0, 2)).toEqual(["silent", "answers"]);
      expect(asked.slice(2, 5)).toEqual(["silent", "answers", "never asked first time"]);
      expect(requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "keep going" });
      expect(messages.at(-2)).toEqual({ role: "user", content: "not me" });
    });

    if (hasContract(chapter, "seam", "beforeStop")) {
      it("beforeStop: asked in list order before any onStop; its answer continues and onStop is not asked", async () => {
        const asked: string[] = [];
        let blocked = false;
        const { messages, requests } = await setup(
          [
            { when: (r) => r.messages.length === 1, reply: reply(text("done?")) },
            { when: (r) => r.messages.at(-1)?.content === "not yet", reply: reply(text("done")) },
          ],
          [
            {
              onStop: async () => {
                asked.push("onStop");
                return null;
              },
            },
            {
              beforeStop: async () => {
                asked.push("gate 1");
                return null;
              },
            },
            {
              beforeStop: async () => {
                asked.push("gate 2");
                if (blocked) return null;
                blocked = true;
                return "not yet";
              },
            },
            {
              beforeStop: async () => {
                asked.push("gate 3");
                return null;
              },
            },
          ],
        );
        // First exit: gate 2 answers, so neither gate 3 nor onStop is asked; second exit:
        // no gate answers, and onStop is asked last.
        expect(asked).toEqual(["gate 1", "gate 2", "gate 1", "gate 2", "gate 3", "onStop"]);
        expect(requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "not yet" });
        expect(messages.some((m) => m.content === "not yet")).toBe(true);
      });
    }

    it("onAppend: every listener sees every appended message with who made it", async () => {
      const seen: string[][] = [[], []];
      const listen = (i: number): Seams => ({
        onAppend: (message, origin) => seen[i]!.push(`${message.role}:${origin}`),
      });
      await setup(oneRound, [listen(0), listen(1)]);
      expect(seen[0]).toEqual(["assistant:model", "user:tool_results", "assistant:model"]);
      expect(seen[1]).toEqual(seen[0]);
    });
  });

  it("every seam gets the run's context: scope, role, signal, request, system and tools", async () => {
    const contexts: ContractModule.RunContext[] = [];
    const record = (run: ContractModule.RunContext) => {
      contexts.push(run);
    };
    await setup(oneRound, [
      {
        beforeModelCall: async (_m, run) => record(run),
        aroundModelCall: (next, _m, run) => {
          record(run);
          return next();
        },
        beforeToolCall: async (_c, run) => {
          record(run);
          return null;
        },
        afterToolCall: async (_c, output, run) => {
          record(run);
          return output;
        },
        onStop: async (_m, _r, run) => {
          record(run);
          return null;
        },
      },
    ]);
    expect(contexts.length).toBe(7);
    for (const run of contexts) {
      expect(run).toMatchObject({
        scope: "main",
        role: "main",
        turn: "user",
        request: "start",
        system: "sys",
      });
      expect(run.signal).toBeInstanceOf(AbortSignal);
      expect([...run.tools.keys()]).toEqual(["bash"]);
    }
  });

  it("tags what it appends, and mechanisms can tag their own messages", () => {
    const message: MessageParam = { role: "user", content: "[summary]" };
    expect(contract.originOf(message)).toBeUndefined();
    expect(contract.tagOrigin(message, "compaction")).toBe(message);
    expect(contract.originOf(message)).toBe("compaction");
  });

  it("a throwing seam becomes an is_error result, never an exception", async () => {
    const { requests } = await setup(oneRound, [
      {
        beforeToolCall: async () => {
          throw new Error("hook exploded");
        },
      },
    ]);
    expect(lastToolResults(requests[1]!)[0]).toMatchObject({
      content: "Error: hook exploded",
      is_error: true,
    });
  });

  it("stops at maxTurns model calls and says so", async () => {
    const { result, requests } = await setup(
      [
        { reply: reply(toolUse("bash", { command: "echo 1" })) },
        { reply: reply(toolUse("bash", { command: "echo 2" })) },
        { reply: reply(toolUse("bash", { command: "echo 3" })) },
      ],
      [],
      2,
    );
    expect(result.stopped).toBe("max_turns");
    expect(result.turns).toBe(2);
    expect(requests).toHaveLength(2);
  });

  it("emits tool_call and tool_result events with the scope and a duration, then the answer", async () => {
    const { events } = await setup(oneRound, []);
    const whole = chaptersFrom("s01", "the main agent's answer arrives whole").includes(chapter);
    expect(events.map((e) => e.type)).toEqual(
      whole
        ? ["tool_call", "tool_result", "text"]
        : ["tool_call", "tool_result", "text_delta", "text"],
    );
    expect(events[1]).toMatchObject({
      scope: "main",
      name: "bash",
      content: "a",
      isError: false,
    });
  });

  it("gathers tools in list order; extendTool changes a tool in place, per role, in list order", () => {
    const tool = (name: string, description = name): ToolDefinition => ({
      name,
      aliases: [],
      description,
      input_schema: { type: "object", properties: {} },
      run: async () => ({ content: name }),
    });
    const mechanisms = [
      { name: "a", tools: () => [tool("one"), tool("two")] },
      {
        name: "b",
        tools: (role: ContractModule.Role) => (role === "main" ? [tool("three")] : []),
      },
      {
        name: "c",
        extendTool: (t: ToolDefinition, role: ContractModule.Role) =>
          t.name === "one" && role === "main" ? { ...t, description: `${t.description}+c` } : t,
      },
      {
        name: "d",
        extendTool: (t: ToolDefinition) =>
          t.name === "one" ? { ...t, description: `${t.description}+d` } : t,
      },
    ];
    const main = contract.gatherTools(mechanisms, "main");
    expect(main.map((t) => `${t.name}:${t.description}`)).toEqual([
      "one:one+c+d",
      "two:two",
      "three:three",
    ]);
    if (hasContract(chapter, "role", "subagent")) {
      const sub = contract.gatherTools(mechanisms, "subagent" as never);
      expect(sub.map((t) => `${t.name}:${t.description}`)).toEqual(["one:one+d", "two:two"]);
    }
  });

  const command = (said: string[], text: string) => ({
    description: text,
    run: async (args: string, _context?: unknown) => {
      said.push(`${text}:${args}`);
      return undefined;
    },
  });

  it("gathers slash commands in list order; a duplicate name throws", () => {
    const commands = contract.commandsOf([
      { name: "a", commands: { tasks: command([], "tasks") } },
      { name: "b", commands: { other: command([], "other") } },
    ]);
    expect([...commands.keys()]).toEqual(["tasks", "other"]);
    expect(() =>
      contract.commandsOf([
        { name: "a", commands: { x: command([], "x") } },
        { name: "b", commands: { x: command([], "y") } },
      ]),
    ).toThrow("two mechanisms define /x");
  });

  it("a second event source of one kind throws, as a second tool of one name does", () => {
    const source = (kind: string) => ({ kind, turn: async () => null });
    expect([...contract.sourcesByKind([source("timer"), source("inbox")]).keys()]).toEqual([
      "timer",
      "inbox",
    ]);
    expect(() => contract.sourcesByKind([source("timer"), source("timer")])).toThrow(
      "two event sources of kind 'timer'",
    );
  });

  it("every mechanism's close runs at the end, in list order, even after one throws", async () => {
    const closed: string[] = [];
    const stdout = new Capture();
    const code = await harness.runHarness(
      {
        argv: [],
        stdin: PassThrough.from([""]),
        stdout,
        env: {
          ANTHROPIC_API_KEY: "k",
          ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
          WORKDIR: tempWorkspace("close-all"),
          NO_COLOR: "1",
        },
      },
      { id: "s00", title: "Test" },
      async () => 0,
      () => [
        { name: "first", close: () => void closed.push("first") },
        {
          name: "broken",
          close: () => {
            closed.push("broken");
            throw new Error("lock file gone");
          },
        },
        {
          name: "last",
          close: async () => {
            closed.push("last");
          },
        },
      ],
    );
    expect(closed).toEqual(["first", "broken", "last"]);
    expect(stdout.text).toContain("[broken] could not close: lock file gone");
    expect(code).toBe(0);
  });

  if (hasContract(chapter, "member", "extendCommand")) {
    it("extendCommand wraps a command in list order", async () => {
      const said: string[] = [];
      type Command = ReturnType<typeof command>;
      const wrap = (tag: string) => (name: string, c: Command) =>
        name === "tasks"
          ? {
              description: `${c.description}+${tag}`,
              run: (args: string, context: unknown) =>
                args === tag ? command(said, tag).run(args) : c.run(args, context),
            }
          : c;
      const mechanisms = [
        {
          name: "a",
          commands: { tasks: command(said, "tasks"), other: command(said, "other") },
        },
        { name: "b", extendCommand: wrap("release") },
        { name: "c", extendCommand: wrap("audit") },
      ];
      const commands = contract.commandsOf(mechanisms as never);
      expect([...commands.keys()]).toEqual(["tasks", "other"]);
      expect(commands.get("tasks")!.description).toBe("tasks+release+audit");
      expect(commands.get("other")!.description).toBe("other");
      const context = { history: [], request: "", signal: new AbortController().signal };
      for (const args of ["release", "audit", ""]) await commands.get("tasks")!.run(args, context);
      expect(said).toEqual(["release:release", "audit:audit", "tasks:"]);
    });
  }

  if (hasContract(chapter, "member", "extendClient")) {
    it("extendClient wraps every model call in list order, the last outermost, also one made through a client a factory kept", async () => {
      server = await startFakeServer({
        // No mechanism gives a tool here, so the step matches the line, not an offered tool.
        model: new ScriptedModel([
          { when: (r) => r.messages[0]?.content === "hello", reply: reply(text("the answer")) },
        ]),
      });
      const calls: string[] = [];
      const wrapper =
        (tag: string) =>
        (client: ModelClient): ModelClient => ({
          create: (params, options) => {
            calls.push(`${tag}:${options?.scope}`);
            return client.create(params, options);
          },
        });
      const stdout = new Capture();
      const code = await harness.runHarness(
        {
          argv: [],
          stdin: PassThrough.from(["hello\n"]),
          stdout,
          env: {
            ANTHROPIC_API_KEY: "k",
            ANTHROPIC_BASE_URL: server.url,
            WORKDIR: tempWorkspace("extend-client"),
            NO_COLOR: "1",
          },
        },
        { id: "s00", title: "Test" },
        async () => 0,
        (h) => {
          // Kept before any extendClient ran: calls through it are wrapped all the same.
          const kept = h.client;
          return [
            { name: "a", extendClient: wrapper("a") },
            {
              name: "side",
              turn: {
                afterTurn: async () => {
                  const side = { role: "user" as const, content: "side call" };
                  await kept.create(
                    { model: h.model, max_tokens: 16, messages: [side] },
                    { scope: "side" },
                  );
                },
              },
            },
            { name: "b", extendClient: wrapper("b") },
          ];
        },
      );
      expect(code).toBe(0);
      expect(stdout.text).toContain("the answer");
      expect(calls).toEqual(["b:main", "a:main", "b:side", "a:side"]);
      expect(server.requests.map((r) => r.rejected)).toEqual([null, null]);
    });
  }

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
    // From a list of mechanisms: identity, then each one's sections for the role asked.
    const mechanisms = [
      { name: "a", sections: () => [{ id: "a", text: "A", dynamic: true }] },
      {
        name: "b",
        sections: (role: ContractModule.Role) =>
          role === "main" ? [{ id: "b", text: "B" }] : [{ id: "b-sub", text: "b" }],
      },
      { name: "c" },
    ];
    expect(prompt.systemPrompt("/ws", mechanisms, "main")).toBe(
      `${prompt.identitySection("/ws").text}\n\nB\n\nA`,
    );
    if (hasContract(chapter, "role", "subagent")) {
      expect(prompt.systemPrompt("/ws", mechanisms, "subagent" as never)).toBe(
        `${prompt.identitySection("/ws").text}\n\nb\n\nA`,
      );
    }
  });

  describe("the REPL", () => {
    const answer = (text: string) =>
      ({
        response: { content: [{ type: "text", text }], stop_reason: "end_turn" },
        turns: 1,
        stopped: "done",
      }) as unknown as Awaited<ReturnType<ReplModule.ReplOptions["runTurn"]>>;

    /** The real REPL over a piped stdin (ended after `input`, or left open when null). */
    function repl_(input: string | null, options: Partial<ReplModule.ReplOptions>) {
      const stdin = new PassThrough();
      const output = new Capture();
      const printer = createPrinter(output, false);
      const reader = new LineReader({ input: stdin, output, printer });
      const history: MessageParam[] = [];
      const turns: ContractModule.Turn[] = [];
      if (input !== null) stdin.end(input);
      const done = repl.runRepl({
        prompt: "> ",
        reader,
        printer,
        usage: new UsageMeter(),
        log: nullLog(),
        model: "m",
        history,
        runTurn: async (turn) => {
          turns.push({ ...turn, history: structuredClone(turn.history) });
          printer.line("(turn ran)");
          turn.history.push({ role: "assistant", content: "ok" });
          // As the loop does: the answer is shown when it arrives, not by the REPL.
          printer.line(`answer to ${turn.request}`);
          return answer(`answer to ${turn.request}`);
        },
        ...options,
      });
      return { done, output, history, turns, reader, stdin };
    }

    it("prepare hooks run in list order; each gets the previous one's input, null drops the line", async () => {
      const { done, turns, history } = repl_("keep\ndrop\n", {
        hooks: [
          {
            prepare: async (input) =>
              input.request === "drop"
                ? null
                : { ...input, content: [{ type: "text", text: input.request }] },
          },
          {
            prepare: async (input) => ({
              ...input,
              content: [
                ...(input.content as Anthropic.ContentBlockParam[]),
                { type: "text", text: "ctx" },
              ],
            }),
          },
        ],
      });
      await done;
      expect(turns.map((turn) => turn.history)).toEqual([
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

    it("beforeTurn sees the new user message; afterTurn runs after the answer is printed", async () => {
      const order: string[] = [];
      const { done, output } = repl_("hello\n", {
        hooks: [
          {
            beforeTurn: async (turn) => {
              order.push(`before:${turn.history.length}:${turn.request}`);
            },
            afterTurn: async (_turn, result) => {
              order.push(`after:${result.stopped}`);
              output.write("[after turn]\n");
            },
          },
          { afterTurn: async () => void order.push("second after") },
        ],
      });
      await done;
      expect(order).toEqual(["before:1:hello", "after:done", "second after"]);
      const text = output.text;
      expect(text.indexOf("answer to hello")).toBeGreaterThan(text.indexOf("(turn ran)"));
      expect(text.indexOf("[after turn]")).toBeGreaterThan(text.indexOf("answer to hello"));
    });

    it("the input message is tagged as the turn's input", async () => {
      const { done, history } = repl_("hello\n", {});
      await done;
      expect(contract.originOf(history[0]!)).toBe("input");
    });

    it("hands an event to the source that registered its kind, which turns it into a turn", async () => {
      let push: ((text: string) => void) | null = null;
      const { done, turns, reader, stdin, output } = repl_(null, {
        sources: [
          {
            kind: "timer",
            start: (queue) => {
              push = queue;
            },
            turn: async (text) =>
              text === "nothing left"
                ? null
                : // Any kind the chapter's contract has: the REPL runs what the source returns.
                  { kind: "user" as const, request: text, content: `[Scheduled] ${text}` },
          },
        ],
      });
      expect(push).not.toBeNull();
      push!("nothing left");
      push!("water the plants");
      reader.push({ type: "external", kind: "nobody's", text: "ignored" });
      stdin.write("typed\n");
      await output.waitFor("> ");
      await new Promise((resolve) => setTimeout(resolve, 50));
      stdin.end();
      await done;
      expect(turns.map(({ kind, request, content }) => ({ kind, request, content }))).toEqual([
        {
          kind: "user",
          request: "water the plants",
          content: "[Scheduled] water the plants",
        },
        { kind: "user", request: "typed", content: "typed" },
      ]);
    });

    it("a slash command can start a turn, and gets the last request and the history", async () => {
      const seen: ContractModule.CommandContext[] = [];
      const { done, turns } = repl_("first\n/again twice\n/unknown\n", {
        commands: new Map([
          [
            "again",
            {
              description: "repeat",
              run: async (args, context) => {
                seen.push({ ...context, history: [...context.history] });
                return { kind: "user", request: `${context.request} ${args}`, content: "again" };
              },
            },
          ],
        ]),
      });
      await done;
      expect(seen[0]?.request).toBe("first");
      expect(seen[0]?.history).toHaveLength(2);
      expect(turns.map((turn) => turn.request)).toEqual(["first", "first twice"]);
    });
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
