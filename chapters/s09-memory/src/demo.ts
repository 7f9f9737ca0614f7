/**
 * s09's offline demo: two sessions in one workspace. In the first, the user states a
 * preference; extraction stores it (and drops a temporary instruction), and `/memory`
 * lists it. The harness then restarts: the second session's recall picks the record and
 * the model answers from it. The workspace's CLAUDE.md is in every prompt.
 * Run: pnpm --filter s09 demo
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text } from "shared/testing";

type Request = Anthropic.MessageCreateParams;
const isSide = (request: Request) => !request.tools || request.tools.length === 0;
const firstText = (request: Request) => JSON.stringify(request.messages[0]?.content ?? "");
const said = (needle: string) => (request: Request) =>
  !isSide(request) && JSON.stringify(request.messages.at(-1)).includes(needle);

const CANDIDATES = [
  {
    name: "Short answers",
    type: "user",
    scope: "persistent",
    description: "The user wants short answers without a preamble",
    body: "Answer in one or two sentences. Skip the preamble and the recap.",
  },
  {
    name: "No tests today",
    type: "feedback",
    scope: "current_task",
    description: "Skip running the tests for this task",
    body: "Do not run the test suite for this task.",
  },
];

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s09",
  shows:
    "a preference stored at the end of one session and recalled in the next; CLAUDE.md in the prompt.",
  setup(workdir) {
    writeFileSync(
      path.join(workdir, "CLAUDE.md"),
      "# Project notes\n\nRun the tests with `npm test` before saying a change is done.\n",
    );
  },
  prompts: [
    "I like short answers, no preamble. Remember that for next time. And skip the tests for this task.",
    "/memory",
  ],
  moreSessions: [["How should you format your answers for me?"]],
  script: [
    {
      name: "session 1: the answer",
      when: said("I like short answers"),
      reply: reply(text("Noted: short answers from now on, and no tests for this task.")),
    },
    {
      name: "session 1: extraction proposes two facts (one is temporary)",
      when: (request) =>
        isSide(request) && String(request.system ?? "").includes("extract durable memory"),
      reply: reply(text(JSON.stringify(CANDIDATES, null, 2))),
    },
    {
      name: "session 2: recall picks record 0",
      when: (request) => isSide(request) && firstText(request).includes("Select memory records"),
      reply: reply(text("[0]")),
    },
    {
      name: "session 2: the answer uses the recalled record",
      when: (request) =>
        said("How should you format")(request) &&
        String(request.system).includes("Relevant memory records"),
      sent: (request) => {
        const system = String(request.system);
        return {
          title: "the end of the system prompt, with the recalled record:",
          text: system.slice(system.lastIndexOf("\n\n", system.indexOf("Memory catalog")) + 2),
        };
      },
      reply: reply(text("Briefly, with no preamble (you told me so last time).")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
