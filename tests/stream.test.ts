/**
 * Streaming (s15): the main agent's replies arrive through `messages.stream()`, their text
 * printed as it arrives, and the history keeps the final message exactly as received; side
 * calls and subagents still ask for the whole answer.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { reply, text, toolUse } from "shared/testing";
import { describe, expect, it } from "vitest";
import { carried, chaptersFrom, moduleVersions } from "./chapters.ts";
import { afterTools, type Capture, isMain, runChapter } from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
const streamed = (r: Request) => "stream" in r && r.stream === true;
/** Longer than one of the fake API's stream chunks, so it arrives in several pieces. */
const ANSWER = "Streaming shows the answer while the model is still writing it, piece by piece.";

const STREAM = moduleVersions("s15", ["loop.ts"]);

describe.concurrent.each(carried(chaptersFrom("s15"), STREAM))("$id streaming", (chapter) => {
  it("prints the main agent's text as it arrives and keeps the message exactly as received", async () => {
    let stdout: Capture | undefined;
    const thinking = { type: "thinking" as const, thinking: "Check first.", signature: "sig-9" };
    const run = await runChapter(chapter, {
      prompts: ["go"],
      onOutput: (capture) => {
        stdout = capture;
      },
      steps: [
        {
          when: (r) => isMain(r) && r.messages.length === 1,
          reply: reply(thinking, text("Looking."), toolUse("task", { prompt: "Say hi." })),
        },
        { when: (r) => !isMain(r), reply: reply(text("hi")) },
        { when: (r) => isMain(r) && afterTools(r), reply: reply(text(ANSWER)) },
      ],
    });
    expect(run.code).toBe(0);
    // Written in several pieces, and shown once.
    const pieces = stdout!.chunks.filter((chunk) => ANSWER.includes(chunk) && chunk.length > 0);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe(ANSWER);
    expect(run.output.split(ANSWER)).toHaveLength(2);
    expect(run.output).toContain("Looking.\n(thinking) Check first.\n> task(");
    // The main agent streams; the subagent asks for the whole answer.
    expect(
      run.requests.map((r) => (isMain(r) ? "main" : "child") + (streamed(r) ? "~" : "")),
    ).toEqual(["main~", "child", "main~"]);
    // The history holds the streamed message exactly: thinking and its signature included.
    const assistant = run.requests[2]!.messages[1]!;
    expect(assistant.content).toEqual([
      thinking,
      { type: "text", text: "Looking.", citations: null },
      expect.objectContaining({ type: "tool_use", name: "task", input: { prompt: "Say hi." } }),
    ]);
  });
});
