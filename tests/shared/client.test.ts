/**
 * The model client's streamed call (s15 streams the main agent's replies): the text arrives
 * in pieces, the message it resolves to is the one `create` would return, and a stream the
 * server cuts off rejects instead of passing for an answer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createAnthropic, createModelClient } from "../../shared/src/client.ts";
import { type FakeServer, startFakeServer } from "../../shared/src/fake-server.ts";
import { nullLog } from "../../shared/src/log.ts";
import { reply, ScriptedModel, text, toolUse } from "../../shared/src/scripted.ts";
import { UsageMeter } from "../../shared/src/usage.ts";

let server: FakeServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function client(steps: ConstructorParameters<typeof ScriptedModel>[0]) {
  server = await startFakeServer({ model: new ScriptedModel(steps) });
  const usage = new UsageMeter();
  const made = createModelClient({
    anthropic: createAnthropic({ apiKey: "k", authToken: null, baseURL: server.url }),
    log: nullLog(),
    usage,
  });
  return { made, usage, server };
}

const params = {
  model: "claude-test-1",
  max_tokens: 100,
  messages: [{ role: "user" as const, content: "hi" }],
  tools: [{ name: "bash", input_schema: { type: "object" as const, properties: {} } }],
};

describe("the streamed model call", () => {
  it("hands the text over as it arrives and resolves to the content create would return", async () => {
    const answer = reply(
      { type: "thinking", thinking: "Let me look.", signature: "sig-1" },
      text("Two words."),
      toolUse("bash", { command: "ls" }, "toolu_stream_1"),
    );
    const { made, usage, server: fake } = await client([{ reply: answer }, { reply: answer }]);
    const pieces: string[] = [];
    const streamed = await made.stream!(params, { onText: (piece) => pieces.push(piece) });
    const plain = await made.create(params);
    expect(pieces.join("")).toBe("Two words.");
    expect(fake.requests[0]!.body).toMatchObject({ stream: true });
    expect(streamed.content).toEqual(plain.content);
    expect(streamed.stop_reason).toBe("tool_use");
    expect(streamed.content[0]).toEqual({
      type: "thinking",
      thinking: "Let me look.",
      signature: "sig-1",
    });
    expect(usage.sessionByScope().get("main")?.calls).toBe(2);
  });

  it("rejects a stream that ends before message_stop, with no retry by the SDK when told", async () => {
    const { made, server: fake } = await client([{ reply: reply(text("never whole")) }]);
    fake.failNext({ fault: "drop" });
    await expect(made.stream!(params, { maxRetries: 0 })).rejects.toThrow();
    expect(fake.requests).toHaveLength(1);
  });
});
