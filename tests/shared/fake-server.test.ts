import Anthropic, { APIConnectionError, APIError } from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import {
  CACHE_LIFETIME_MS,
  type FakeServer,
  type FakeServerOptions,
  startFakeServer,
  validateMessageRequest,
} from "../../shared/src/fake-server.ts";
import {
  apiError,
  reply,
  ScriptedModel,
  type ScriptStep,
  text,
  toolUse,
} from "../../shared/src/scripted.ts";

const MODEL = "claude-test-1";
const TOOLS: Anthropic.Tool[] = [
  {
    name: "read_file",
    description: "Read a file",
    input_schema: { type: "object", properties: { path: { type: "string" } } },
  },
];

let servers: FakeServer[] = [];

afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function start(
  modelOrSteps: ScriptStep[] | FakeServerOptions["model"],
  extra: Omit<FakeServerOptions, "model"> = {},
): Promise<FakeServer> {
  const model = Array.isArray(modelOrSteps) ? new ScriptedModel(modelOrSteps) : modelOrSteps;
  const server = await startFakeServer({ model, ...extra });
  servers.push(server);
  return server;
}

function clientFor(server: FakeServer, maxRetries = 0): Anthropic {
  return new Anthropic({ apiKey: "test-key", authToken: null, baseURL: server.url, maxRetries });
}

function params(
  overrides: Partial<Anthropic.MessageCreateParamsNonStreaming> = {},
): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model: MODEL,
    max_tokens: 1024,
    messages: [{ role: "user", content: "Hello" }],
    tools: TOOLS,
    ...overrides,
  };
}

/** The promise's rejection; fails the test when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

async function apiErrorOf(promise: Promise<unknown>): Promise<APIError> {
  const err = await rejectionOf(promise);
  if (!(err instanceof APIError)) throw new Error(`expected an APIError, got ${String(err)}`);
  return err;
}

describe("fake server: answers", () => {
  it("round-trips a plain reply into a typed Message with usage", async () => {
    const server = await start([{ reply: reply(text("Hi there!")) }]);
    const message = await clientFor(server).messages.create(params());
    expect(message.id).toMatch(/^msg_[A-Za-z0-9]+$/);
    expect(message.type).toBe("message");
    expect(message.role).toBe("assistant");
    expect(message.model).toBe(MODEL);
    expect(message.content).toEqual([{ type: "text", text: "Hi there!", citations: null }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.stop_sequence).toBeNull();
    const rawBody = server.requests[0]!.rawBody;
    expect(message.usage.input_tokens).toBe(Math.ceil(rawBody.length / 4));
    expect(message.usage.output_tokens).toBe(Math.ceil("Hi there!".length / 4));
    expect(message.usage.cache_read_input_tokens).toBe(0);
    expect(message.usage.cache_creation_input_tokens).toBe(0);
    expect(message.usage.server_tool_use).toBeNull();
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      method: "POST",
      path: "/v1/messages",
      rejected: null,
    });
    expect(server.requests[0]!.headers.authorization).toBe("Bearer test-key");
    expect(server.requests[0]!.body).toMatchObject({ model: MODEL, max_tokens: 1024 });
  });

  it("times each request from its arrival to its answer, streamed or not", async () => {
    const server = await start([{ reply: reply(text("one")) }, { reply: reply(text("two")) }]);
    const before = performance.now();
    await clientFor(server).messages.create(params());
    await clientFor(server).messages.stream(params()).finalMessage();
    const after = performance.now();
    const [first, second] = server.requests.map((r) => r.timing);
    expect(first!.receivedMs).toBeGreaterThanOrEqual(before);
    expect(first!.answeredMs).toBeGreaterThanOrEqual(first!.receivedMs);
    expect(second!.receivedMs).toBeGreaterThanOrEqual(first!.answeredMs!);
    expect(second!.answeredMs).toBeGreaterThanOrEqual(second!.receivedMs);
    expect(second!.answeredMs).toBeLessThanOrEqual(after);
  });

  it("uses the reply's usage and stop reason when the script gives them", async () => {
    const server = await start([
      {
        reply: {
          content: [text("partial")],
          stop_reason: "max_tokens",
          usage: { input_tokens: 7, output_tokens: 3, cache_read_input_tokens: 5 },
        },
      },
    ]);
    const message = await clientFor(server).messages.create(params());
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.usage).toMatchObject({
      input_tokens: 7,
      output_tokens: 3,
      cache_read_input_tokens: 5,
    });
  });

  it("returns tool_use blocks with the script's ids and stop_reason tool_use", async () => {
    const server = await start([
      { reply: reply(text("Reading."), toolUse("read_file", { path: "a.txt" })) },
    ]);
    const message = await clientFor(server).messages.create(params());
    expect(message.stop_reason).toBe("tool_use");
    const block = message.content[1];
    expect(block).toMatchObject({ type: "tool_use", name: "read_file", input: { path: "a.txt" } });
    expect(block?.type === "tool_use" ? block.id : "").toMatch(/^toolu_[A-Za-z0-9]{24}$/);
  });

  it("streams text deltas and a final message equal to the script", async () => {
    const longText = "The quick brown fox jumps over the lazy dog, twice over.";
    const server = await start([
      {
        reply: reply(
          { type: "thinking", thinking: "Let me think about foxes and dogs." },
          text(longText),
          toolUse("read_file", { path: "notes/fox.txt", lines: [1, 2, 3] }, "toolu_fixed"),
        ),
      },
    ]);
    const stream = clientFor(server).messages.stream(params());
    const deltas: string[] = [];
    const thinkingDeltas: string[] = [];
    const jsonDeltas: string[] = [];
    const eventTypes: string[] = [];
    stream.on("text", (delta) => deltas.push(delta));
    stream.on("thinking", (delta) => thinkingDeltas.push(delta));
    stream.on("inputJson", (partial) => jsonDeltas.push(partial));
    stream.on("streamEvent", (event) => eventTypes.push(event.type));
    const final = await stream.finalMessage();

    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(longText);
    expect(thinkingDeltas.join("")).toBe("Let me think about foxes and dogs.");
    expect(jsonDeltas.length).toBeGreaterThanOrEqual(2);
    expect(eventTypes[0]).toBe("message_start");
    expect(eventTypes.slice(-2)).toEqual(["message_delta", "message_stop"]);

    expect(final.content).toHaveLength(3);
    expect(final.content[0]).toMatchObject({
      type: "thinking",
      thinking: "Let me think about foxes and dogs.",
    });
    expect(final.content[0]?.type === "thinking" ? final.content[0].signature : "").not.toBe("");
    expect(final.content[1]).toMatchObject({ type: "text", text: longText });
    expect(final.content[2]).toMatchObject({
      type: "tool_use",
      id: "toolu_fixed",
      name: "read_file",
      input: { path: "notes/fox.txt", lines: [1, 2, 3] },
    });
    expect(final.stop_reason).toBe("tool_use");
    expect(final.usage.output_tokens).toBeGreaterThan(1);
    expect(final.usage.input_tokens).toBe(Math.ceil(server.requests[0]!.rawBody.length / 4));
  });

  it("answers side calls without tools with [] and records them as unmatched", async () => {
    const model = new ScriptedModel([{ reply: reply(text("main loop only")) }]);
    const server = await start(model);
    const message = await clientFor(server).messages.create(params({ tools: [] }));
    expect(message.content).toEqual([{ type: "text", text: "[]", citations: null }]);
    expect(model.remaining).toBe(1);
    expect(model.unmatched).toHaveLength(1);
    expect(model.unmatched[0]?.messages).toEqual([{ role: "user", content: "Hello" }]);
  });

  it("matches steps by predicate out of order and counts down remaining", async () => {
    const isTitle = (r: Anthropic.MessageCreateParams) =>
      JSON.stringify(r.messages).includes("Write a title");
    const model = new ScriptedModel([
      { name: "main", reply: reply(text("main")) },
      { name: "title", when: isTitle, reply: reply(text("A title")) },
    ]);
    const server = await start(model);
    const client = clientFor(server);
    const title = await client.messages.create(
      params({ tools: [], messages: [{ role: "user", content: "Write a title" }] }),
    );
    expect(title.content).toMatchObject([{ text: "A title" }]);
    expect(model.remaining).toBe(1);
    const main = await client.messages.create(params());
    expect(main.content).toMatchObject([{ text: "main" }]);
    expect(model.remaining).toBe(0);
    const extra = await client.messages.create(params());
    expect(extra.content).toMatchObject([
      { text: "(scripted model: no step left for this request)" },
    ]);
    expect(model.unmatched).toHaveLength(1);
  });

  it("accepts a valid tool_use / tool_result exchange", async () => {
    const server = await start([{ reply: reply(text("The file says hi.")) }]);
    const message = await clientFor(server).messages.create(
      params({
        messages: [
          { role: "user", content: "Read a.txt" },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Reading it." },
              { type: "tool_use", id: "toolu_a", name: "read_file", input: { path: "a.txt" } },
              { type: "tool_use", id: "toolu_b", name: "read_file", input: { path: "b.txt" } },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "toolu_a", content: "hi" },
              {
                type: "tool_result",
                tool_use_id: "toolu_b",
                content: [{ type: "text", text: "ho" }],
              },
              { type: "text", text: "Go on." },
            ],
          },
        ],
      }),
    );
    expect(message.content).toMatchObject([{ text: "The file says hi." }]);
    expect(server.requests[0]!.rejected).toBeNull();
  });

  it("lets a plain function be the model", async () => {
    const server = await start((req) => reply(text(`you sent ${req.messages.length} message(s)`)));
    const message = await clientFor(server).messages.create(params());
    expect(message.content).toMatchObject([{ text: "you sent 1 message(s)" }]);
  });

  it("answers 500 api_error instead of crashing when the script throws", async () => {
    const server = await start(() => {
      throw new Error("bad script");
    });
    const err = await apiErrorOf(clientFor(server).messages.create(params()));
    expect(err.status).toBe(500);
    expect(err.apiMessage).toContain("bad script");
  });
});

describe("fake server: validation", () => {
  const toolTurn: Anthropic.MessageParam = {
    role: "assistant",
    content: [{ type: "tool_use", id: "toolu_x", name: "read_file", input: {} }],
  };
  const cases: { name: string; body: Record<string, unknown>; message: string }[] = [
    {
      name: "missing max_tokens",
      body: { model: MODEL, messages: [{ role: "user", content: "hi" }] },
      message: "max_tokens: Field required",
    },
    {
      name: "max_tokens not positive",
      body: { model: MODEL, max_tokens: 0, messages: [{ role: "user", content: "hi" }] },
      message: "max_tokens: Input should be greater than or equal to 1",
    },
    {
      name: "max_tokens not an integer",
      body: { model: MODEL, max_tokens: 1.5, messages: [{ role: "user", content: "hi" }] },
      message: "max_tokens: Input should be a valid integer",
    },
    {
      name: "missing model",
      body: { max_tokens: 10, messages: [{ role: "user", content: "hi" }] },
      message: "model: Field required",
    },
    {
      name: "empty model",
      body: { model: "", max_tokens: 10, messages: [{ role: "user", content: "hi" }] },
      message: "model: String should have at least 1 character",
    },
    {
      name: "messages not an array",
      body: { model: MODEL, max_tokens: 10, messages: "hi" },
      message: "messages: Input should be a valid list",
    },
    {
      name: "messages empty",
      body: { model: MODEL, max_tokens: 10, messages: [] },
      message: "messages: at least one message is required",
    },
    {
      name: "first message from the assistant",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "assistant", content: "Hi" },
          { role: "user", content: "hello" },
        ],
      },
      message: 'messages: first message must use the "user" role',
    },
    {
      name: "unknown role",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          { role: "system", content: "be nice" },
        ],
      },
      message: 'messages: Unexpected role "system". Allowed roles are "user" or "assistant"',
    },
    {
      name: "empty text block",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: [{ type: "text", text: "" }] }],
      },
      message: "messages: text content blocks must be non-empty",
    },
    {
      name: "whitespace-only text block",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: [{ type: "text", text: " \n " }] }],
      },
      message: "messages: text content blocks must contain non-whitespace text",
    },
    {
      name: "empty string content",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: "" },
          { role: "user", content: "again" },
        ],
      },
      message:
        "messages.1: all messages must have non-empty content except for the optional final assistant message",
    },
    {
      name: "empty final assistant message",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: [] },
        ],
      },
      message: "messages.1: the final assistant message must have non-empty content",
    },
    {
      name: "bad tool name",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
        tools: [{ name: "read file", input_schema: { type: "object" } }],
      },
      message: "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
    },
    {
      name: "duplicate tool names",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
        tools: [
          { name: "read_file", input_schema: { type: "object" } },
          { name: "read_file", input_schema: { type: "object" } },
        ],
      },
      message: "tools: Tool names must be unique.",
    },
    {
      name: "tool_use without a tool_result",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          toolTurn,
          { role: "user", content: "what now?" },
        ],
      },
      message:
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. " +
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    },
    {
      name: "orphan tool_result",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: "Sure." },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: "toolu_ghost", content: "x" }],
          },
        ],
      },
      message:
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_ghost. " +
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    },
    {
      name: "text before the tool_result",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          toolTurn,
          {
            role: "user",
            content: [
              { type: "text", text: "Here you go:" },
              { type: "tool_result", tool_use_id: "toolu_x", content: "x" },
            ],
          },
        ],
      },
      message:
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x.",
    },
    {
      name: "duplicate tool_result",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          toolTurn,
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "toolu_x", content: "x" },
              { type: "tool_result", tool_use_id: "toolu_x", content: "again" },
            ],
          },
        ],
      },
      message:
        "messages.2.content.1: each `tool_use` must have a single result. Found multiple `tool_result` blocks with id: toolu_x",
    },
    {
      name: "duplicate tool_use ids",
      body: {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: [
              { type: "tool_use", id: "toolu_x", name: "read_file", input: {} },
              { type: "tool_use", id: "toolu_x", name: "read_file", input: {} },
            ],
          },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "x" }],
          },
        ],
      },
      message: "messages.1.content.1: `tool_use` ids must be unique",
    },
  ];

  it.each(cases)(
    "rejects $name with 400 and does not consume a step",
    async ({ body, message }) => {
      const model = new ScriptedModel([
        { when: () => true, reply: reply(text("should not be used")) },
      ]);
      const server = await start(model);
      const client = clientFor(server);
      const err = await apiErrorOf(
        client.messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming),
      );
      expect(err.status).toBe(400);
      expect(err.type).toBe("invalid_request_error");
      expect(err.apiMessage).toContain(message);
      expect(err.requestID).toMatch(/^req_/);
      expect(err.headers?.get("x-should-retry")).toBe("false");
      expect(err.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]!.rejected).toBe(err.apiMessage);
      expect(model.remaining).toBe(1);
      expect(model.unmatched).toHaveLength(0);
    },
  );

  it("accepts every valid request the table's invalid ones are built from", () => {
    expect(validateMessageRequest(params())).toBeNull();
    expect(
      validateMessageRequest(
        params({
          messages: [
            { role: "user", content: "hi" },
            toolTurn,
            {
              role: "user",
              content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "x" }],
            },
            { role: "assistant", content: "Prefill" },
          ],
        }),
      ),
    ).toBeNull();
  });

  it("rejects a body that is not JSON", async () => {
    const server = await start([]);
    const response = await fetch(`${server.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "k", "content-type": "application/json" },
      body: "{not json",
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as {
      type: string;
      error: { type: string; message: string };
    };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toMatch(/^The request body is not valid JSON: /);
    expect(response.headers.get("request-id")).toMatch(/^req_/);
    expect(server.requests[0]).toMatchObject({ rawBody: "{not json", body: undefined });
  });

  it("rejects JSON that is not an object, and keeps serving", async () => {
    const server = await start([{ reply: reply(text("still here")) }]);
    for (const raw of ["[1,2]", "null", '"text"']) {
      const response = await fetch(`${server.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": "k" },
        body: raw,
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { type: "invalid_request_error" } });
    }
    const message = await clientFor(server).messages.create(params());
    expect(message.content).toMatchObject([{ text: "still here" }]);
  });

  it("answers 404 with the error envelope on other paths", async () => {
    const server = await start([]);
    const response = await fetch(`${server.url}/v1/complete`, {
      method: "POST",
      headers: { "x-api-key": "k" },
      body: "{}",
    });
    expect(response.status).toBe(404);
    const body = (await response.json()) as { error: { type: string }; request_id: string };
    expect(body.error.type).toBe("not_found_error");
    expect(body.request_id).toMatch(/^req_/);
    expect(server.requests[0]!.path).toBe("/v1/complete");
  });

  it("requires an x-api-key or a bearer token", async () => {
    const server = await start([{ reply: reply(text("ok")) }]);
    const body = JSON.stringify(params());
    const noAuth = await fetch(`${server.url}/v1/messages`, { method: "POST", body });
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toMatchObject({
      error: { type: "authentication_error", message: "x-api-key header is required" },
    });
    const withKey = await fetch(`${server.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "k" },
      body,
    });
    expect(withKey.status).toBe(200);
    expect(server.requests.map((r) => r.rejected)).toEqual(["x-api-key header is required", null]);
  });

  it("answers 404 for an unknown model when knownModels is given", async () => {
    const model = new ScriptedModel([{ reply: reply(text("ok")) }]);
    const server = await start(model, { knownModels: [MODEL] });
    const client = clientFor(server);
    const err = await apiErrorOf(client.messages.create(params({ model: "claude-nope" })));
    expect(err.status).toBe(404);
    expect(err.type).toBe("not_found_error");
    expect(err.apiMessage).toBe("model: claude-nope");
    expect(model.remaining).toBe(1);
    const ok = await client.messages.create(params());
    expect(ok.content).toMatchObject([{ text: "ok" }]);
  });
});

describe("fake server: the real API's block, id, system, tool and cache rules", () => {
  const CACHE = { type: "ephemeral" } as const;
  const toolUseBlock = { type: "tool_use", id: "toolu_x", name: "read_file", input: {} };
  const toolResultBlock = { type: "tool_result", tool_use_id: "toolu_x", content: "x" };

  function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
      ...overrides,
    };
  }

  /** A tool exchange whose tool_use and tool_result blocks the caller shapes. */
  function exchange(
    use: Record<string, unknown>,
    result: Record<string, unknown> = toolResultBlock,
  ): Record<string, unknown>[] {
    return [
      { role: "user", content: "hi" },
      { role: "assistant", content: [use] },
      { role: "user", content: [result] },
    ];
  }

  /** Sends `request` through the SDK: a 400 invalid_request_error with exactly `message`. */
  async function expectRefused(request: Record<string, unknown>, message: string): Promise<void> {
    const model = new ScriptedModel([{ when: () => true, reply: reply(text("unused")) }]);
    const server = await start(model);
    const err = await apiErrorOf(
      clientFor(server).messages.create(
        request as unknown as Anthropic.MessageCreateParamsNonStreaming,
      ),
    );
    expect(err.status).toBe(400);
    expect(err.type).toBe("invalid_request_error");
    expect(err.apiMessage).toBe(message);
    expect(server.requests[0]!.rejected).toBe(message);
    expect(model.remaining).toBe(1);
  }

  /** Sends `request` through the SDK: answered by the model, not refused. */
  async function expectAccepted(request: Record<string, unknown>): Promise<void> {
    const server = await start(() => reply(text("ok")));
    const message = await clientFor(server).messages.create(
      request as unknown as Anthropic.MessageCreateParamsNonStreaming,
    );
    expect(message.content).toMatchObject([{ text: "ok" }]);
    expect(server.requests[0]!.rejected).toBeNull();
  }

  it("rejects a tool_use block in a user message", async () => {
    await expectRefused(
      body({ messages: [{ role: "user", content: [toolUseBlock] }] }),
      "messages.0: `tool_use` blocks can only be in `assistant` messages",
    );
    await expectAccepted(body({ messages: exchange(toolUseBlock) }));
  });

  it("rejects a tool_result block in an assistant message", async () => {
    // The shape a harness makes when it folds the results into the turn that asked for them.
    await expectRefused(
      body({
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: [toolUseBlock, toolResultBlock] },
        ],
      }),
      "messages.1: `tool_result` blocks can only be in `user` messages",
    );
    await expectAccepted(body({ messages: exchange(toolUseBlock) }));
  });

  it("rejects a tool_use id with characters outside [a-zA-Z0-9_-]", async () => {
    for (const id of ["call.1", "functions.Bash:0", "toolu x", ""]) {
      await expectRefused(
        body({
          messages: exchange({ ...toolUseBlock, id }, { ...toolResultBlock, tool_use_id: "ok" }),
        }),
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
      );
    }
    await expectAccepted(
      body({
        messages: exchange(
          { ...toolUseBlock, id: "call_0-Az9" },
          { ...toolResultBlock, tool_use_id: "call_0-Az9" },
        ),
      }),
    );
  });

  it("rejects a tool_result tool_use_id with characters outside [a-zA-Z0-9_-]", async () => {
    await expectRefused(
      body({ messages: exchange(toolUseBlock, { ...toolResultBlock, tool_use_id: "toolu/x" }) }),
      "messages.2.content.0.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    );
    await expectAccepted(body({ messages: exchange(toolUseBlock) }));
  });

  it("rejects a tool_use input that is not a JSON object", async () => {
    for (const input of [[1, 2], '{"path":"a.txt"}', null, 42]) {
      await expectRefused(
        body({ messages: exchange({ ...toolUseBlock, input }) }),
        "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
      );
    }
    await expectAccepted(body({ messages: exchange({ ...toolUseBlock, input: { path: "a" } }) }));
  });

  it("rejects an empty or whitespace-only system prompt, as a string or a block", async () => {
    await expectRefused(body({ system: "" }), "system: text content blocks must be non-empty");
    await expectRefused(
      body({ system: " \n" }),
      "system: text content blocks must contain non-whitespace text",
    );
    await expectRefused(
      body({
        system: [
          { type: "text", text: "You are terse." },
          { type: "text", text: "" },
        ],
      }),
      "system: text content blocks must be non-empty",
    );
    await expectAccepted(body({ system: "You are terse." }));
    await expectAccepted(body({ system: [{ type: "text", text: "You are terse." }] }));
  });

  it("rejects a system that is neither a string nor a list of text blocks", async () => {
    for (const system of [null, 42, { type: "text", text: "You are terse." }]) {
      await expectRefused(body({ system }), "system: Input should be a valid list");
    }
    await expectRefused(
      body({ system: [{ type: "image", source: { type: "base64", data: "" } }] }),
      "system.0.type: Input should be 'text'",
    );
    await expectRefused(
      body({ system: ["You are terse."] }),
      "system.0: Input should be a valid dictionary",
    );
    await expectRefused(body({ system: [{ type: "text" }] }), "system.0.text: Field required");
    await expectAccepted(
      body({ system: [{ type: "text", text: "You are terse.", cache_control: CACHE }] }),
    );
  });

  it("rejects a custom tool without an object input_schema", async () => {
    const named = { name: "read_file", description: "Read a file" };
    await expectRefused(body({ tools: [named] }), "tools.0.custom.input_schema: Field required");
    await expectRefused(
      body({ tools: [{ ...named, type: "custom", input_schema: "object" }] }),
      "tools.0.custom.input_schema: Input should be a valid dictionary",
    );
    await expectRefused(
      body({ tools: [{ ...named, input_schema: { properties: {} } }] }),
      "tools.0.custom.input_schema.type: Field required",
    );
    await expectRefused(
      body({ tools: [...TOOLS, { ...named, name: "list", input_schema: { type: "array" } }] }),
      "tools.1.custom.input_schema.type: Input should be 'object'",
    );
    // A server tool carries its own schema, so it has none to give.
    await expectAccepted(body({ tools: [...TOOLS, { type: "bash_20250124", name: "bash" }] }));
  });

  it("rejects unknown content block types, in a message and inside a tool_result", async () => {
    await expectRefused(
      body({ messages: [{ role: "user", content: [{ type: "foo", text: "hi" }] }] }),
      "messages.0.content.0: Input tag 'foo' found using 'type' does not match any of the " +
        "expected tags: 'text', 'image', 'document', 'search_result', 'thinking', " +
        "'redacted_thinking', 'tool_use', 'tool_result', 'server_tool_use', " +
        "'web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result', " +
        "'bash_code_execution_tool_result', 'text_editor_code_execution_tool_result', " +
        "'tool_search_tool_result', 'container_upload'",
    );
    await expectRefused(
      body({ messages: exchange(toolUseBlock, { ...toolResultBlock, content: [toolUseBlock] }) }),
      "messages.2.content.0.tool_result.content.0: Input tag 'tool_use' found using 'type' " +
        "does not match any of the expected tags: 'text', 'image', 'search_result', " +
        "'document', 'tool_reference', 'browser_state'",
    );
    const image = {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
    };
    await expectAccepted(
      body({
        messages: exchange(toolUseBlock, {
          ...toolResultBlock,
          content: [{ type: "text", text: "a picture:" }, image],
        }),
      }),
    );
    await expectAccepted(
      body({ messages: [{ role: "user", content: [image, { type: "text", text: "what?" }] }] }),
    );
  });

  it("rejects more than 4 blocks with cache_control across system, tools and messages", async () => {
    const cached = (t: string) => ({ type: "text", text: t, cache_control: CACHE });
    const system = [cached("You are terse."), cached("Project notes.")];
    const tools = [{ ...TOOLS[0], cache_control: CACHE }];
    await expectRefused(
      body({ system, tools, messages: [{ role: "user", content: [cached("a"), cached("b")] }] }),
      "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    );
    // A block inside a tool_result is a breakpoint of its own.
    await expectRefused(
      body({
        system,
        tools,
        messages: exchange(
          { ...toolUseBlock, cache_control: CACHE },
          { ...toolResultBlock, content: [cached("result")] },
        ),
      }),
      "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    );
    // Four is the limit, and a null cache_control is no marker.
    await expectAccepted(
      body({
        system,
        tools,
        messages: [
          {
            role: "user",
            content: [cached("a"), { type: "text", text: "b", cache_control: null }],
          },
        ],
      }),
    );
  });
});

describe("fake server: faults", () => {
  it.each([
    [429, "rate_limit_error"],
    [529, "overloaded_error"],
    [500, "api_error"],
  ])("delivers a %i %s to the client as an APIError", async (status, type) => {
    const server = await start([{ reply: apiError(status, type, `scripted ${type}`) }]);
    const err = await apiErrorOf(clientFor(server).messages.create(params()));
    expect(err.status).toBe(status);
    expect(err.type).toBe(type);
    expect(err.apiMessage).toBe(`scripted ${type}`);
    expect(err.headers?.get("x-should-retry")).toBe("false");
    expect(server.requests).toHaveLength(1);
  });

  it("does not retry a fault that is not retryable, even with retries allowed", async () => {
    const server = await start([{ reply: reply(text("never reached")) }]);
    server.failNext(apiError(529, "overloaded_error", "Overloaded"));
    const err = await apiErrorOf(clientFor(server, 2).messages.create(params()));
    expect(err.status).toBe(529);
    expect(server.requests).toHaveLength(1);
  });

  it("lets the SDK retry a retryable fault and succeed on the next answer", async () => {
    const model = new ScriptedModel([{ reply: reply(text("after the retry")) }]);
    const server = await start(model);
    server.failNext(
      apiError(529, "overloaded_error", "Overloaded", {
        retryable: true,
        headers: { "retry-after-ms": "1" },
      }),
    );
    const message = await clientFor(server, 1).messages.create(params());
    expect(message.content).toMatchObject([{ text: "after the retry" }]);
    expect(server.requests).toHaveLength(2);
    expect(model.remaining).toBe(0);
  });

  it("applies queued faults in order before the model answers", async () => {
    const model = new ScriptedModel([{ reply: reply(text("finally")) }]);
    const server = await start(model);
    server.failNext(apiError(429, "rate_limit_error", "first"));
    server.failNext(apiError(500, "api_error", "second"));
    const client = clientFor(server);
    expect((await apiErrorOf(client.messages.create(params()))).apiMessage).toBe("first");
    expect((await apiErrorOf(client.messages.create(params()))).apiMessage).toBe("second");
    expect(model.remaining).toBe(1);
    expect((await client.messages.create(params())).content).toMatchObject([{ text: "finally" }]);
  });

  it("drops the connection: APIConnectionError, and the server stays up", async () => {
    const server = await start([
      { reply: { fault: "drop" } },
      { reply: reply(text("back again")) },
    ]);
    const client = clientFor(server);
    const err = await rejectionOf(client.messages.create(params()));
    expect(err).toBeInstanceOf(APIConnectionError);
    const message = await client.messages.create(params());
    expect(message.content).toMatchObject([{ text: "back again" }]);
  });

  it("drops a stream mid-message: the stream rejects", async () => {
    const server = await start([{ reply: reply(text("unused")) }, { reply: reply(text("next")) }]);
    server.failNext({ fault: "drop", afterEvents: 3 });
    const client = clientFor(server);
    const stream = client.messages.stream(params());
    const seen: string[] = [];
    stream.on("streamEvent", (event) => seen.push(event.type));
    stream.on("error", () => {});
    const err = await rejectionOf(stream.finalMessage());
    // A cut connection, not a cleanly ended stream that merely lacks message_stop.
    expect(String(err)).toMatch(/terminated|socket|other side closed/i);
    expect(seen).toEqual(["message_start", "content_block_start", "content_block_delta"]);
    const next = await client.messages.create(params());
    expect(next.content).toMatchObject([{ text: "unused" }]);
  });

  it("waits latencyMs before answering", async () => {
    const server = await start([{ reply: reply(text("slow")) }], { latencyMs: 60 });
    const started = Date.now();
    await clientFor(server).messages.create(params());
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
  });

  it("closes with open connections", async () => {
    const server = await startFakeServer({ model: new ScriptedModel([]), latencyMs: 5000 });
    const pending = rejectionOf(clientFor(server).messages.create(params()));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await server.close();
    expect(await pending).toBeInstanceOf(APIConnectionError);
  });
});

describe("fake server: the prompt cache", () => {
  it("writes a breakpoint's prefix once, reads it back, and writes only what a longer one adds", async () => {
    const server = await start([
      { reply: reply(text("a")) },
      { reply: reply(text("b")) },
      { reply: reply(text("c")) },
      { reply: reply(text("d")) },
    ]);
    const client = clientFor(server);
    const stable = "You are a careful agent. ".repeat(200);
    const system = [
      { type: "text" as const, text: stable, cache_control: { type: "ephemeral" as const } },
    ];
    const ask = (messages: Anthropic.MessageParam[], cached = true) =>
      client.messages.create({
        model: MODEL,
        max_tokens: 10,
        tools: TOOLS,
        system: cached ? system : stable,
        messages,
      });
    const first = await ask([{ role: "user", content: "hi" }]);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(stable.length / 4);
    const second = await ask([{ role: "user", content: "hello again" }]);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
    // A second breakpoint on the newest message: the system part is read, the rest written.
    const marked = {
      role: "user" as const,
      content: [
        {
          type: "text" as const,
          text: "more ".repeat(50),
          cache_control: { type: "ephemeral" as const },
        },
      ],
    };
    const third = await ask([marked]);
    expect(third.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(third.usage.cache_creation_input_tokens).toBeGreaterThan(50);
    // No breakpoint: nothing read or written, everything is input.
    const plain = await ask([{ role: "user", content: "hi" }], false);
    expect(plain.usage.cache_read_input_tokens).toBe(0);
    expect(plain.usage.cache_creation_input_tokens).toBe(0);
  });

  // A conversation of `blocks` user text blocks after a long system prompt, each block ~40
  // tokens, with a breakpoint on block `mark` (or none).
  const ECHO = () => reply(text("ok"));
  const SYSTEM = "Stable instructions for the agent. ".repeat(300); // ~2600 tokens
  const request = (blocks: number, mark: number | null, model = MODEL, system = SYSTEM) => ({
    model,
    max_tokens: 10,
    system: [{ type: "text" as const, text: system }],
    messages: [
      {
        role: "user" as const,
        content: Array.from({ length: blocks }, (_, i) => ({
          type: "text" as const,
          text: `block ${i} `.repeat(16),
          ...(i === mark ? { cache_control: { type: "ephemeral" as const } } : {}),
        })),
      },
    ],
  });
  const usageOf = async (server: FakeServer, body: ReturnType<typeof request>) =>
    (await clientFor(server).messages.create(body)).usage;

  it("keys a prefix by its content, not its markers: a breakpoint moved on reads what the old one wrote", async () => {
    const server = await start(ECHO);
    const first = await usageOf(server, request(3, 2));
    expect(first.cache_creation_input_tokens).toBeGreaterThan(2048);
    const moved = await usageOf(server, request(6, 5));
    expect(moved.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(moved.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(moved.cache_creation_input_tokens).toBeLessThan(200);
    // Anything before the breakpoint changed: nothing to read, all written again.
    const changed = await usageOf(server, request(6, 5, MODEL, `${SYSTEM}!`));
    expect(changed.cache_read_input_tokens).toBe(0);
    expect(changed.cache_creation_input_tokens).toBeGreaterThan(2048);
  });

  it("looks back twenty blocks from a breakpoint for an earlier cached prefix, and no further", async () => {
    const server = await start(ECHO);
    const written = (await usageOf(server, request(3, 2))).cache_creation_input_tokens!;
    // Block 22 is 20 blocks after block 2: the prefix ending there is found.
    expect((await usageOf(server, request(23, 22))).cache_read_input_tokens).toBe(written);
    const other = await start(ECHO);
    await usageOf(other, request(3, 2));
    // Block 23 is 21 blocks after it: out of reach, the whole prefix is written anew.
    const far = await usageOf(other, request(24, 23));
    expect(far.cache_read_input_tokens).toBe(0);
    expect(far.cache_creation_input_tokens).toBeGreaterThan(written);
  });

  it("caches nothing shorter than the model's minimum (2048 tokens for claude-sonnet-4-6, 1024 for most)", async () => {
    const server = await start(ECHO);
    const short = "Short instructions. ".repeat(300); // ~1500 tokens with the blocks
    for (const [model, cached] of [
      ["claude-sonnet-4-6", false],
      ["claude-haiku-4-5", false],
      ["claude-sonnet-5", true],
      ["claude-opus-5", true],
    ] as const) {
      const first = await usageOf(server, request(2, 1, model, `${model} ${short}`));
      const again = await usageOf(server, request(2, 1, model, `${model} ${short}`));
      expect([first.cache_creation_input_tokens! > 0, again.cache_read_input_tokens! > 0]).toEqual([
        cached,
        cached,
      ]);
    }
  });

  it("keeps an entry five minutes from its last use, on the clock it is given", async () => {
    let clock = 0;
    const server = await start(ECHO, { now: () => clock });
    const written = (await usageOf(server, request(3, 2))).cache_creation_input_tokens!;
    clock = CACHE_LIFETIME_MS - 1;
    expect((await usageOf(server, request(3, 2))).cache_read_input_tokens).toBe(written);
    // The read started its five minutes again.
    clock += CACHE_LIFETIME_MS - 1;
    expect((await usageOf(server, request(3, 2))).cache_read_input_tokens).toBe(written);
    clock += CACHE_LIFETIME_MS;
    const cold = await usageOf(server, request(3, 2));
    expect(cold.cache_read_input_tokens).toBe(0);
    expect(cold.cache_creation_input_tokens).toBe(written);
  });

  it("reads a breakpoint on a tool result's inner block", async () => {
    const server = await start(ECHO);
    const body = (marked: boolean) => ({
      model: MODEL,
      max_tokens: 10,
      system: SYSTEM,
      messages: [
        { role: "user" as const, content: "read it" },
        {
          role: "assistant" as const,
          content: [{ type: "tool_use" as const, id: "toolu_1", name: "read_file", input: {} }],
        },
        {
          role: "user" as const,
          content: [
            {
              type: "tool_result" as const,
              tool_use_id: "toolu_1",
              content: [
                {
                  type: "text" as const,
                  text: "contents",
                  ...(marked ? { cache_control: { type: "ephemeral" as const } } : {}),
                },
              ],
            },
          ],
        },
      ],
    });
    const first = await clientFor(server).messages.create(body(true));
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(2048);
    const plain = await clientFor(server).messages.create(body(false));
    expect(plain.usage.cache_read_input_tokens).toBe(0);
  });
});
