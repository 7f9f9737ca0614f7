/**
 * s16's offline demo: the model runs the saved `review-changes` workflow on a small change,
 * then resumes the same run, and every agent call comes from the journal.
 *
 *   "Review the change …" ──> Workflow {review-changes, args.changes} ──> event lines,
 *        four audits side by side, one verification per finding, the report ──> the answer
 *   "Run it again from its journal" ──> Workflow {resume_from_run_id} ──> every call
 *        "cached", agents=0 tokens=0
 * The workflow's agents are answered from what each request asks (a repeating step).
 * Run: pnpm --filter s16 demo
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";
import { AGENT_SYSTEM } from "./workflow-core.ts";

type Request = Anthropic.MessageCreateParams;

export const DEMO_CHANGES = [
  "--- a/src/users.ts",
  "+++ b/src/users.ts",
  "+export function findUser(db: Db, id: string) {",
  '+  return db.query("SELECT * FROM users WHERE id = " + id);',
  "+}",
].join("\n");

const REVIEW = "Review the change in CHANGES.diff with the review-changes workflow.";
const RESUME = "Run that workflow again from its journal.";

const systemText = (r: Request) =>
  typeof r.system === "string" ? r.system : (r.system ?? []).map((b) => b.text).join("");
const promptOf = (r: Request) => {
  const content = r.messages[0]?.content;
  return typeof content === "string" ? content : "";
};
/** The text of every tool result the request carries, oldest first. */
const results = (r: Request) =>
  r.messages.flatMap((m) =>
    Array.isArray(m.content)
      ? m.content.flatMap((b) =>
          b.type === "tool_result" && typeof b.content === "string" ? [b.content] : [],
        )
      : [],
  );
const lastResult = (r: Request) => {
  const content = r.messages.at(-1)?.content;
  return Array.isArray(content)
    ? (results({ ...r, messages: [r.messages.at(-1)!] })[0] ?? null)
    : null;
};
const said = (r: Request, line: string) => r.messages.at(-1)?.content === line;

/** What each reviewer finds, by dimension; the verifier refutes the style finding. */
const FINDINGS: Record<string, Array<{ title: string; severity: string }>> = {
  correctness: [{ title: "an unknown id returns undefined, not an error", severity: "medium" }],
  security: [{ title: "SQL built from the caller's id (injection)", severity: "high" }],
  performance: [],
  style: [{ title: "string concatenation instead of a template", severity: "low" }],
};

/** A workflow agent's answer, from what its request asks. */
function agentAnswer(r: Request) {
  const prompt = promptOf(r);
  const audit = /^Review this change context for (\w+) issues/.exec(prompt);
  if (audit) return reply(text(JSON.stringify({ findings: FINDINGS[audit[1]!] ?? [] })));
  const refuted = prompt.includes("string concatenation");
  return reply(
    text(
      JSON.stringify({
        isReal: !refuted,
        reason: refuted ? "could not reproduce: a style preference" : "reproduced",
      }),
    ),
  );
}

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s16",
  shows:
    "the model runs the saved review-changes workflow (four audits in parallel, each finding verified, one sorted report), then resumes the same run and every agent call comes from the journal.",
  prompts: [REVIEW, RESUME],
  setup(workdir) {
    writeFileSync(path.join(workdir, "CHANGES.diff"), `${DEMO_CHANGES}\n`);
  },
  script: [
    {
      name: "the workflow's agents",
      repeat: true,
      when: (r) => systemText(r) === AGENT_SYSTEM,
      reply: agentAnswer,
    },
    {
      name: "read the change",
      when: (r) => said(r, REVIEW),
      reply: reply(toolUse("read_file", { path: "CHANGES.diff" })),
    },
    {
      name: "run review-changes on it",
      when: (r) => lastResult(r)?.includes("+++ b/src/users.ts") === true,
      reply: reply(
        toolUse("Workflow", { name: "review-changes", args: { changes: DEMO_CHANGES } }),
      ),
    },
    {
      name: "report",
      when: (r) => lastResult(r)?.includes('"confirmed"') === true && !said(r, RESUME),
      reply: reply(
        text(
          "Two confirmed findings: SQL injection through the id (high) and no error for an unknown id (medium). The style remark did not survive verification.",
        ),
      ),
    },
    {
      name: "resume the run",
      when: (r) => said(r, RESUME),
      reply: (r) => {
        const run = results(r).find((content) => content.startsWith('{"launched"')) ?? "{}";
        const runId = (JSON.parse(run) as { launched?: { runId?: string } }).launched?.runId;
        return reply(
          toolUse("Workflow", { name: "review-changes", resume_from_run_id: runId ?? "" }),
        );
      },
    },
    {
      name: "the same report, from the journal",
      when: (r) => lastResult(r)?.includes('"confirmed"') === true,
      reply: reply(text("Same two findings; every agent call came from the journal (0 tokens).")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
