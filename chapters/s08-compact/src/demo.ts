/**
 * s08's offline demo, with the limits lowered so every layer acts within a few rounds: a
 * large log goes to a file (L3), older notes the model has read become placeholders (L2),
 * `/compact` asks for a summary (L4), and a "prompt is too long" answer from the API is
 * met with one reactive compaction and a retry. Run: pnpm --filter s08 demo
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

const NOTES: Record<string, string> = {
  "a.md": "Note A: the release is on Friday. ".repeat(12),
  "b.md": "Note B: the staging database is read-only until Thursday. ".repeat(8),
  "c.md": "Note C: ask Dana before touching the billing code. ".repeat(10),
};

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s08",
  shows:
    "with lowered limits: a big output moved to a file, old results compacted, /compact, and a reactive retry.",
  env: {
    L3_COMPACT_PERSIST_THRESHOLD: "4000",
    L2_COMPACT_KEEP_RECENT: "1",
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
    "Read big.log and the three notes in notes/, then tell me what matters.",
    "/compact keep the facts from the notes",
    "What did note B say?",
  ],
  script: [
    {
      name: "read the log",
      when: said("Read big.log and the three notes in notes/, then tell me what matters."),
      reply: reply(toolUse("read_file", { path: "big.log" })),
    },
    {
      name: "note a",
      when: (r) => last(r).includes("<persisted-output>"),
      reply: reply(toolUse("read_file", { path: "notes/a.md" })),
    },
    {
      name: "note b",
      when: (r) => last(r).includes("Note A:"),
      reply: reply(toolUse("read_file", { path: "notes/b.md" })),
    },
    {
      name: "note c",
      when: (r) => last(r).includes("Note B:"),
      reply: reply(toolUse("read_file", { path: "notes/c.md" })),
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
      name: "the summary call (no tools)",
      when: isSummaryCall,
      reply: reply(
        text(
          "User asked what matters in big.log and notes/. Findings: log healthy; release Friday; staging DB read-only until Thursday; ask Dana before billing code changes.",
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
