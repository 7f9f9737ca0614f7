/**
 * s16.1: a workflow agent whose call fails answers null, and review-changes goes on without
 * it. Run it with `pnpm course exercise check s16.1`.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  apiError,
  expect,
  it,
  lastMentions,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

type Request = Parameters<typeof afterTools>[0];
type Answer = ReturnType<typeof reply> | ReturnType<typeof apiError>;

const CHANGES = '+export const first = (xs: string[]) => xs[1];\n+db.query("SELECT " + id);';
const json = (value: unknown) => reply(text(JSON.stringify(value)));
const NOT_JSON = reply(text("I could not review this."));
const OFF_BY_ONE = { title: "off by one", severity: "medium" };
const INJECTION = { title: "SQL injection", severity: "high" };

/** The main agent's requests offer tools; a workflow agent's offer none. */
const isMain = (request: Request) => toolNames(request).length > 0;
const promptOf = (request: Request) => String(request.messages[0]?.content);

/**
 * How each workflow agent answers, from its prompt: the correctness audit finds one issue,
 * the performance and style audits none; `security` and `verify` decide the rest.
 */
function agents(security: () => Answer, verify: (prompt: string) => Answer) {
  return (request: Request): Answer => {
    const prompt = promptOf(request);
    if (prompt.startsWith("Review this change context for security")) return security();
    if (prompt.startsWith("Review this change context for correctness"))
      return json({ findings: [OFF_BY_ONE] });
    if (prompt.startsWith("Review this change context")) return json({ findings: [] });
    return verify(prompt);
  };
}

const REAL = json({ isReal: true, reason: "seen in the diff" });

/** One review-changes run on CHANGES; the run and the tool result the model got back. */
async function review(answer: (request: Request) => Answer) {
  const run = await runExercise({
    prompts: ["review the change"],
    steps: [
      {
        when: (r) => isMain(r) && !afterTools(r),
        reply: reply(toolUse("Workflow", { name: "review-changes", args: { changes: CHANGES } })),
      },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("Reviewed.")) },
      { when: (r) => !isMain(r), reply: answer, repeat: true },
    ],
  });
  return { run, outcome: toolResult(run, 0) };
}

/** The `n`th Workflow result of a session, parsed: `{launched, result, task}`. */
function toolResult(run: RunOutcome, n: number) {
  const results = run.requests.filter((r) => isMain(r) && afterTools(r));
  const content = String(lastToolResults(results[n]!)[0]!.content);
  return JSON.parse(content.startsWith("{") ? content : "{}") as {
    launched?: { runId: string };
    result?: unknown;
    task?: { status: string; usage: { agents: number } };
  };
}

/** The lines of the run's journal. */
function journal(run: RunOutcome, runId: string): string[] {
  const dir = path.join(run.workdir, ".harness", "workflows");
  const file = readdirSync(dir).find((name) => name === `${runId}.journal.jsonl`)!;
  return readFileSync(path.join(dir, file), "utf8").split("\n").filter(Boolean);
}

it("finishes the run when an audit fails, naming its dimension in unreviewed", async () => {
  const { outcome } = await review(
    agents(
      () => NOT_JSON,
      () => REAL,
    ),
  );
  expect(outcome.task?.status).toBe("completed");
  expect(outcome.result).toEqual({
    confirmed: [{ dimension: "correctness", ...OFF_BY_ONE }],
    unreviewed: ["security"],
    unverified: [],
  });
});

it("shows the failed agent as status=failed, and keeps it out of the journal and the usage", async () => {
  const { run, outcome } = await review(
    agents(
      () => NOT_JSON,
      () => REAL,
    ),
  );
  expect(run.output).toMatch(/workflow_agent\s+label=audit:security phase=Review status=failed/);
  // Three audits and one verification finished; the failed audit is in neither count.
  expect(outcome.task?.usage.agents).toBe(4);
  expect(journal(run, outcome.launched!.runId)).toHaveLength(4);
});

it("keeps a finding whose verification failed in unverified, not in confirmed", async () => {
  const { outcome } = await review(
    agents(
      () => json({ findings: [INJECTION] }),
      (prompt) =>
        prompt.includes("security finding")
          ? apiError(400, "invalid_request_error", "The verifier's request was refused.")
          : REAL,
    ),
  );
  expect(outcome.task?.status).toBe("completed");
  expect(outcome.result).toEqual({
    confirmed: [{ dimension: "correctness", ...OFF_BY_ONE }],
    unreviewed: [],
    unverified: [{ dimension: "security", ...INJECTION }],
  });
});

it("asks again only for the failed agent when the run is resumed", async () => {
  let securityAudits = 0;
  const answer = agents(
    // The first run's audit and its one retry fail; the resumed run's succeeds.
    () => (++securityAudits <= 2 ? NOT_JSON : json({ findings: [INJECTION] })),
    () => REAL,
  );
  const asked: string[] = [];
  const runId = (r: Request) => /wf_review-changes_[0-9a-f]{16}/.exec(JSON.stringify(r))?.[0];
  const run = await runExercise({
    prompts: ["review the change", "resume that run"],
    steps: [
      {
        when: (r) => isMain(r) && lastMentions("review the change")(r) && !afterTools(r),
        reply: reply(toolUse("Workflow", { name: "review-changes", args: { changes: CHANGES } })),
      },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("Reviewed.")) },
      {
        when: (r) => isMain(r) && lastMentions("resume that run")(r),
        reply: (r) =>
          reply(
            toolUse("Workflow", { name: "review-changes", resume_from_run_id: runId(r) ?? "" }),
          ),
      },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("Resumed.")) },
      {
        when: (r) => !isMain(r),
        reply: (r) => {
          asked.push(promptOf(r));
          return answer(r);
        },
        repeat: true,
      },
    ],
  });
  const resumed = toolResult(run, 1);
  expect(resumed.task?.status).toBe("completed");
  expect(resumed.result).toEqual({
    confirmed: [
      { dimension: "security", ...INJECTION },
      { dimension: "correctness", ...OFF_BY_ONE },
    ],
    unreviewed: [],
    unverified: [],
  });
  // The first run asked 4 audits (security twice) and 1 verification; the resume asked
  // only the security audit and its verification.
  const second = asked.slice(6);
  expect(second).toHaveLength(2);
  expect(second[0]).toMatch(/^Review this change context for security/);
  expect(second[1]).toMatch(/^Adversarially verify this security finding/);
});
