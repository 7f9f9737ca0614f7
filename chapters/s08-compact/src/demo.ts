/**
 * s08's offline demo, with the limits lowered (and printed) so every layer acts within a
 * few turns: a large log goes to a file and the model gets a stub (L3, the stub is shown
 * as sent), older results the model has read become placeholders (L2), a long history is
 * cut to a head and a tail (L1), a request over the context limit is summarized (L4,
 * automatic), `/compact` asks for a summary by hand, and a "prompt is too long" answer
 * from the API is met with one reactive compaction and a retry.
 * Run: pnpm --filter s08 demo
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { apiError, type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;
const isSummaryCall = (request: Request) => !request.tools || request.tools.length === 0;
const last = (request: Request) => JSON.stringify(request.messages.at(-1));
const said = (line: string) => (request: Request) =>
  !isSummaryCall(request) && request.messages.at(-1)?.content === line;

/** The first tool_result text in the request's last message. */
function firstResult(request: Request): string {
  const content = request.messages.at(-1)?.content;
  if (!Array.isArray(content)) return "";
  const block = content.find((b) => b.type === "tool_result");
  return block?.type === "tool_result" && typeof block.content === "string" ? block.content : "";
}

/** A stub as the model receives it, its 2 000-character preview cut to three lines here. */
function shortStub(stub: string): string {
  const lines = stub.split("\n");
  const preview = lines.indexOf("Preview:");
  const hidden = lines.length - preview - 5;
  return [...lines.slice(0, preview + 4), `… (${hidden} more preview lines)`, lines.at(-1)].join(
    "\n",
  );
}

const NOTES: Record<string, string> = {
  "a.md": "Note A: the release is on Friday. ".repeat(5),
  "b.md": "Note B: the staging database is read-only until Thursday. ".repeat(3),
  "c.md": "Note C: ask Dana before touching the billing code. ".repeat(4),
  "d.md": "Note D: the on-call rota changes on Monday. ".repeat(88),
};

const READ_ALL = "Read big.log and the notes a, b and c in notes/, then tell me what matters.";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s08",
  shows:
    "every layer at lowered limits: L3 stub, L2 placeholders, L1 snip, an automatic L4 summary, /compact, and a reactive retry.",
  env: {
    L3_COMPACT_PERSIST_THRESHOLD: "4000",
    L2_COMPACT_KEEP_RECENT: "1",
    L1_COMPACT_SNIP_MAX_MESSAGES: "8",
    L1_COMPACT_SNIP_TARGET_MESSAGES: "5",
    L1_COMPACT_SNIP_KEEP_HEAD: "2",
    L4_COMPACT_CONTEXT_LIMIT: "9000",
  },
  setup(workdir) {
    const lines = Array.from(
      { length: 600 },
      (_, i) => `2026-11-30 07:${String(i % 60).padStart(2, "0")} worker ok ${i}`,
    );
    writeFileSync(path.join(workdir, "big.log"), `${lines.join("\n")}\n`);
    mkdirSync(path.join(workdir, "notes"));
    for (const [name, body] of Object.entries(NOTES))
      writeFileSync(path.join(workdir, "notes", name), body);
  },
  prompts: [
    READ_ALL,
    "Now read notes/d.md.",
    "/compact keep the facts from the notes",
    "What did note B say?",
  ],
  script: [
    {
      name: "read the log",
      when: said(READ_ALL),
      reply: reply(toolUse("read_file", { path: "big.log" })),
    },
    {
      name: "the three notes in one round",
      when: (r) => last(r).includes("<persisted-output>"),
      sent: (r) => ({
        title: "in place of big.log's 18 489 characters (L3):",
        text: shortStub(firstResult(r)),
      }),
      reply: reply(
        toolUse("read_file", { path: "notes/a.md" }),
        toolUse("read_file", { path: "notes/b.md" }),
        toolUse("read_file", { path: "notes/c.md" }),
      ),
    },
    {
      name: "answer",
      when: (r) => last(r).includes("Note C:"),
      reply: reply(
        text(
          "The log is 600 healthy lines. Release Friday; staging DB read-only until Thursday; ask Dana before billing changes.",
        ),
      ),
    },
    {
      name: "read a fourth note",
      when: said("Now read notes/d.md."),
      reply: reply(toolUse("read_file", { path: "notes/d.md" })),
    },
    {
      name: "the automatic summary (no tools)",
      when: isSummaryCall,
      reply: reply(
        text(
          "User asked what matters in big.log and notes/. Findings: log healthy; release Friday; staging DB read-only until Thursday; ask Dana before billing code changes; note D: on-call rota changes Monday.",
        ),
      ),
    },
    {
      name: "answer after the summary",
      when: (r) => !isSummaryCall(r) && last(r).includes("Note D:"),
      reply: reply(text("Note D: the on-call rota changes on Monday.")),
    },
    {
      name: "the /compact summary (no tools)",
      when: isSummaryCall,
      reply: reply(
        text(
          "Facts from the notes: release Friday; staging DB read-only until Thursday; ask Dana before billing code changes; on-call rota changes Monday.",
        ),
      ),
    },
    {
      name: "the API says the prompt is too long",
      when: said("What did note B say?"),
      reply: apiError(
        400,
        "invalid_request_error",
        "prompt is too long: 213512 tokens > 200000 maximum",
      ),
    },
    {
      name: "second summary (reactive)",
      when: isSummaryCall,
      reply: reply(text("Earlier: notes read; staging DB read-only until Thursday (note B).")),
    },
    {
      name: "answer after the retry (the summary restates the request)",
      when: (r) =>
        !isSummaryCall(r) && last(r).includes("Current user request:\\nWhat did note B say?"),
      reply: reply(text("Note B: the staging database is read-only until Thursday.")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
