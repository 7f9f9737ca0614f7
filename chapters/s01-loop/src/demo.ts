/**
 * s01's offline demo: one request, one round with two `bash` calls whose real output goes
 * back to the model (the demo prints that message as the model receives it), then a
 * blocked command. The "model" is a script; everything else is
 * the real harness. Run: pnpm --filter s01 demo
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

/** The tool_result texts in the request's last message, in order. */
function lastResults(request: Anthropic.MessageCreateParams): string[] {
  const last = request.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content.flatMap((block) =>
    block.type === "tool_result" && typeof block.content === "string" ? [block.content] : [],
  );
}

const hasResults = (request: Anthropic.MessageCreateParams) => lastResults(request).length > 0;

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s01",
  shows: "the loop runs two bash calls in one round, feeds their output back, then answers.",
  setup(workdir) {
    writeFileSync(path.join(workdir, "hello.txt"), "Hello from the demo workspace.\n");
    writeFileSync(path.join(workdir, "notes.md"), "# Notes\n\n- the loop is the whole trick\n");
  },
  prompts: ["What files are in this folder, and how many lines does each have?", "Now run sudo ls"],
  script: [
    {
      name: "two bash calls in one reply",
      when: (request) => !hasResults(request) && JSON.stringify(request.messages).includes("files"),
      reply: reply(
        text("I'll list the folder and count lines in one go."),
        toolUse("bash", { command: "ls" }),
        toolUse("bash", { command: "wc -l *" }),
      ),
    },
    {
      name: "answer from the real output",
      when: hasResults,
      sent: (request) => ({
        title: "request 2 ends with one user message: a tool_result per tool_use_id",
        text: JSON.stringify(request.messages.at(-1), null, 2),
      }),
      reply: (request) => {
        const [listing = "", counts = ""] = lastResults(request);
        return reply(
          text(
            `The folder holds ${listing.split("\n").join(", ")}. Line counts (from wc):\n${counts}`,
          ),
        );
      },
    },
    {
      name: "a command on the block list",
      when: (request) => JSON.stringify(request.messages.at(-1)).includes("sudo ls"),
      reply: reply(toolUse("bash", { command: "sudo ls" })),
    },
    {
      name: "accept the refusal",
      when: (request) => lastResults(request).some((r) => r.includes("block list")),
      reply: reply(text("That command is on the harness's block list, so it did not run.")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
