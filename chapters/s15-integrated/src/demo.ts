/**
 * s15's offline demo: the model's service fails the way real ones do, and the turn goes on.
 *
 *   "Summarise NOTES.md" ──> 529, 529 ──> [retry] lines, then [fallback]: the rest of the
 *        turn asks FALLBACK_MODEL_ID ──> read_file ──> the answer starts to stream and the
 *        stream breaks off ──> [retry] ──> the answer, streamed whole
 *   the next line ──> MODEL_ID again; its reply is cut off at max_tokens ──> [max_tokens]:
 *        asked again with 16 000 ──> the whole answer; each usage line ends with its price
 * Run: pnpm --filter s15 demo
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { apiError, type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;
const last = (request: Request) => request.messages.at(-1)?.content;
const said = (request: Request, line: string) => last(request) === line;
const afterRead = (request: Request) => {
  const content = last(request);
  return Array.isArray(content) && content.some((block) => block.type === "tool_result");
};

const ASK = "Summarise NOTES.md in one sentence.";
const AGAIN = "And which model answers now?";
const FALLBACK = "claude-haiku-4-5";
/** Overloaded, and the service asks for a second's patience (the demo's wait). */
const overloaded = apiError(529, "overloaded_error", "Overloaded", {
  headers: { "retry-after": "1" },
});
const modelOf = (r: Request) => ({ title: "this request asks the model", text: r.model });

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s15",
  shows:
    "two 529s switch the turn to the fallback model, a stream that breaks off is retried, the next turn starts on MODEL_ID again and a reply cut off at max_tokens is asked for again with more room.",
  prompts: [ASK, AGAIN],
  env: { FALLBACK_MODEL_ID: FALLBACK },
  setup(workdir) {
    writeFileSync(
      path.join(workdir, "NOTES.md"),
      "# Notes\n\nThe release is on Friday; the changelog still needs the API section.\n",
    );
  },
  script: [
    { name: "overloaded", when: (r) => said(r, ASK), reply: overloaded },
    { name: "overloaded again", when: (r) => said(r, ASK), reply: overloaded },
    {
      name: "the fallback model reads the file",
      when: (r) => said(r, ASK),
      sent: modelOf,
      reply: reply(toolUse("read_file", { path: "NOTES.md" })),
    },
    // Cut off after a few words of the answer have streamed.
    { name: "the stream breaks off", when: afterRead, reply: { fault: "drop", afterEvents: 4 } },
    {
      name: "the answer, on the same turn",
      when: afterRead,
      sent: modelOf,
      reply: reply(
        text("The release is on Friday, and the changelog still lacks its API section."),
      ),
    },
    {
      name: "a new turn, cut off at max_tokens",
      when: (r) => said(r, AGAIN),
      sent: modelOf,
      reply: { ...reply(text("This turn started on")), stop_reason: "max_tokens" },
    },
    {
      name: "asked again with more room",
      when: (r) => said(r, AGAIN),
      sent: (r) => ({ title: "the same request, with max_tokens", text: String(r.max_tokens) }),
      reply: reply(text("This turn started on MODEL_ID again.")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
