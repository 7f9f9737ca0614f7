/**
 * s11's offline demo: a slow command goes to the background and answers at once with a
 * job ID; the agent reads a file and runs another command meanwhile; when the job ends,
 * its <task_notification> rides in the next request after that round's tool results (the
 * demo prints that message as the model receives it). `/bg` then lists the job.
 * Run: pnpm --filter s11 demo
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;
const last = (request: Request) => JSON.stringify(request.messages.at(-1));
const blocksOf = (request: Request): Anthropic.ContentBlockParam[] => {
  const content = request.messages.at(-1)?.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
};

const ASK = "Run the slow check in the background, and meanwhile show me notes.md.";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s11",
  shows:
    "a background job answers at once; the agent works on; the job's notification arrives with a later tool result.",
  setup(workdir) {
    writeFileSync(
      path.join(workdir, "notes.md"),
      "# Notes\n\n- the check takes two seconds\n- nothing waits for it\n",
    );
  },
  prompts: [ASK, "/bg"],
  script: [
    {
      name: "start the job and read a file in the same round",
      when: (r) => last(r).includes(ASK),
      reply: reply(
        text("Starting the check in the background, and reading the notes meanwhile."),
        toolUse("bash", { command: "sleep 2; echo 'check: 12 passed'", run_in_background: true }),
        toolUse("read_file", { path: "notes.md" }),
      ),
    },
    {
      name: "more work while the job runs",
      when: (r) => last(r).includes("nothing waits for it"),
      reply: reply(toolUse("bash", { command: "sleep 3; wc -l notes.md" })),
    },
    {
      name: "the notification arrives after that round's result",
      when: (r) => last(r).includes("task_notification"),
      sent: (r) => ({
        title: "request 3 ends with one user message: the round's result, then the notification",
        text: blocksOf(r)
          .map((block) =>
            block.type === "tool_result"
              ? `[tool_result ${block.tool_use_id}] ${String(block.content)}`
              : block.type === "text"
                ? `[text] ${block.text}`
                : `[${block.type}]`,
          )
          .join("\n"),
      }),
      reply: reply(
        text("notes.md has 4 lines (two notes). The background check finished: 12 passed."),
      ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
