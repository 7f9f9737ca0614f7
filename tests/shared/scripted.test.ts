import { describe, expect, it } from "vitest";
import {
  apiError,
  type MessageRequest,
  NO_STEP_LEFT_TEXT,
  reply,
  ScriptedModel,
  type ScriptedReply,
  stopReasonOf,
  text,
  thinking,
  toolUse,
} from "../../shared/src/scripted.ts";

const TOOL = { name: "read_file", input_schema: { type: "object" as const } };

function mainCall(prompt: string): MessageRequest {
  return {
    model: "claude-test",
    max_tokens: 100,
    messages: [{ role: "user", content: prompt }],
    tools: [TOOL],
  };
}

function sideCall(prompt: string): MessageRequest {
  return { model: "claude-test", max_tokens: 100, messages: [{ role: "user", content: prompt }] };
}

function lastUserText(req: MessageRequest): string {
  const content = req.messages.at(-1)?.content;
  return typeof content === "string" ? content : "";
}

function asReply(answer: ReturnType<ScriptedModel["answer"]>): ScriptedReply {
  if ("fault" in answer) throw new Error(`expected a reply, got fault ${answer.fault}`);
  return answer;
}

describe("ScriptedModel", () => {
  it("answers main-loop calls with steps in order and counts down remaining", () => {
    const model = new ScriptedModel([{ reply: reply(text("one")) }, { reply: reply(text("two")) }]);
    expect(model.remaining).toBe(2);
    expect(asReply(model.answer(mainCall("a"))).content).toEqual([text("one")]);
    expect(model.remaining).toBe(1);
    expect(asReply(model.answer(mainCall("b"))).content).toEqual([text("two")]);
    expect(model.remaining).toBe(0);
    expect(model.unmatched).toEqual([]);
  });

  it("matches steps by predicate, out of order", () => {
    const model = new ScriptedModel([
      { name: "main", reply: reply(text("main answer")) },
      { name: "title", when: (r) => lastUserText(r).startsWith("Title:"), reply: reply(text("T")) },
      {
        name: "summary",
        when: (r) => lastUserText(r).startsWith("Summarize"),
        reply: reply(text("S")),
      },
    ]);
    // The summary side call arrives first, then the title, then the main call.
    expect(asReply(model.answer(sideCall("Summarize this"))).content).toEqual([text("S")]);
    expect(model.pending).toEqual(["main", "title"]);
    expect(asReply(model.answer(sideCall("Title: x"))).content).toEqual([text("T")]);
    expect(asReply(model.answer(mainCall("go"))).content).toEqual([text("main answer")]);
    expect(model.remaining).toBe(0);
  });

  it("does not let a step without `when` answer a side call", () => {
    const model = new ScriptedModel([{ reply: reply(text("for the main loop")) }]);
    const side = sideCall("make a title");
    const answer = asReply(model.answer(side));
    expect(answer.content).toEqual([text("[]")]);
    expect(model.remaining).toBe(1);
    expect(model.unmatched).toEqual([side]);
  });

  it("answers an unmatched main-loop call with end_turn text and records it", () => {
    const model = new ScriptedModel([]);
    const req = mainCall("anything");
    const answer = asReply(model.answer(req));
    expect(answer.content).toEqual([text(NO_STEP_LEFT_TEXT)]);
    expect(answer.stop_reason).toBe("end_turn");
    expect(model.unmatched).toEqual([req]);
  });

  it("consumes a step once, even when its predicate still matches", () => {
    const model = new ScriptedModel([{ when: () => true, reply: reply(text("only once")) }]);
    expect(asReply(model.answer(sideCall("x"))).content).toEqual([text("only once")]);
    expect(asReply(model.answer(sideCall("x"))).content).toEqual([text("[]")]);
    expect(model.unmatched).toHaveLength(1);
  });

  it("answers every matching request with a repeating step, which never counts as pending", () => {
    const model = new ScriptedModel([
      { when: () => true, repeat: true, reply: (req) => reply(text(`re: ${lastUserText(req)}`)) },
      { reply: reply(text("main")) },
    ]);
    expect(asReply(model.answer(sideCall("a"))).content).toEqual([text("re: a")]);
    expect(asReply(model.answer(sideCall("b"))).content).toEqual([text("re: b")]);
    expect(model.remaining).toBe(1);
    expect(model.pending).toEqual(["step 1"]);
    expect(model.unmatched).toEqual([]);
  });

  it("calls function replies with the request", () => {
    const model = new ScriptedModel([
      { reply: (req) => reply(text(`echo: ${lastUserText(req)}`)) },
    ]);
    expect(asReply(model.answer(mainCall("hello"))).content).toEqual([text("echo: hello")]);
  });

  it("passes faults through unchanged", () => {
    const fault = apiError(529, "overloaded_error", "Overloaded");
    const model = new ScriptedModel([{ reply: fault }, { reply: { fault: "drop" } }]);
    expect(model.answer(mainCall("a"))).toEqual(fault);
    expect(model.answer(mainCall("b"))).toEqual({ fault: "drop" });
  });

  it("generates tool-use ids that look real, are unique, and repeat across runs", () => {
    const script = () =>
      new ScriptedModel([
        { reply: reply(toolUse("read_file", { path: "a" }), toolUse("read_file", { path: "b" })) },
        { reply: reply(toolUse("read_file", { path: "c" }, "toolu_given")) },
      ]);
    const idsOf = (model: ScriptedModel) =>
      [model.answer(mainCall("1")), model.answer(mainCall("2"))].flatMap((a) =>
        asReply(a).content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])),
      );
    const first = idsOf(script());
    expect(first).toHaveLength(3);
    expect(first[2]).toBe("toolu_given");
    for (const id of first.slice(0, 2)) expect(id).toMatch(/^toolu_[A-Za-z0-9]{24}$/);
    expect(new Set(first).size).toBe(3);
    expect(idsOf(script())).toEqual(first);
  });

  it("does not mutate the script's own reply objects", () => {
    const shared = reply(toolUse("read_file", { path: "a" }));
    const model = new ScriptedModel([{ reply: shared }]);
    model.answer(mainCall("x"));
    expect(shared.content[0]).toEqual({
      type: "tool_use",
      name: "read_file",
      input: { path: "a" },
    });
  });
});

describe("builders", () => {
  it("build blocks and replies", () => {
    expect(thinking("hmm")).toEqual({ type: "thinking", thinking: "hmm" });
    expect(toolUse("bash", { command: "ls" })).toEqual({
      type: "tool_use",
      name: "bash",
      input: { command: "ls" },
    });
    expect(reply(text("a"), text("b")).content).toHaveLength(2);
  });

  it("default the stop reason from the content", () => {
    expect(stopReasonOf(reply(text("done")))).toBe("end_turn");
    expect(stopReasonOf(reply(text("let me look"), toolUse("bash", {})))).toBe("tool_use");
    expect(stopReasonOf({ ...reply(text("cut")), stop_reason: "max_tokens" })).toBe("max_tokens");
  });

  it("make API errors that are not retryable unless asked", () => {
    expect(apiError(429, "rate_limit_error", "slow down")).toEqual({
      fault: "error",
      status: 429,
      type: "rate_limit_error",
      message: "slow down",
    });
    const retryable = apiError(529, "overloaded_error", "Overloaded", {
      retryable: true,
      headers: { "retry-after-ms": "1" },
    });
    expect(retryable.retryable).toBe(true);
    expect(retryable.headers).toEqual({ "retry-after-ms": "1" });
  });
});
