/**
 * s16.2: a time limit for each workflow agent's request. Run it with
 * `pnpm course exercise check s16.2`.
 */
import { readFileSync } from "node:fs";
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

const CHANGES = "+export const first = (xs: string[]) => xs[1];";
const json = (value: unknown) => reply(text(JSON.stringify(value)));
const OFF_BY_ONE = { title: "off by one", severity: "medium" };

/**
 * An overloaded answer that asks to be retried in `ms` milliseconds: s15's retry layer waits
 * that long before it asks again, so the agent's request takes at least `ms`.
 */
const slow = (ms: number) =>
  apiError(529, "overloaded_error", "Overloaded", { headers: { "retry-after-ms": String(ms) } });

/** The main agent's requests offer tools; a workflow agent's offer none. */
const isMain = (request: Request) => toolNames(request).length > 0;
const promptOf = (request: Request) => String(request.messages[0]?.content);

/**
 * Workflow agents answered from their prompt: the correctness audit finds one issue, the
 * verifier confirms it, the other audits find nothing. `delay(prompt, asked)` says how long
 * the `asked`th request with that prompt is held up (0: answered at once).
 */
function agents(delay: (prompt: string, asked: number) => number) {
  const counts = new Map<string, number>();
  const prompts: string[] = [];
  const answer = (request: Request): Answer => {
    const prompt = promptOf(request);
    prompts.push(prompt);
    const asked = (counts.get(prompt) ?? 0) + 1;
    counts.set(prompt, asked);
    const ms = delay(prompt, asked);
    if (ms > 0) return slow(ms);
    if (prompt.startsWith("Review this change context for correctness"))
      return json({ findings: [OFF_BY_ONE] });
    if (prompt.startsWith("Review this change context")) return json({ findings: [] });
    return json({ isReal: true, reason: "seen in the diff" });
  };
  return { answer, prompts };
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

const WORKFLOW = toolUse("Workflow", { name: "review-changes", args: { changes: CHANGES } });

/** One review-changes run with WORKFLOW_AGENT_TIMEOUT_MS set to `timeout` (when given). */
async function review(answer: (request: Request) => Answer, timeout?: string) {
  const run = await runExercise({
    env: timeout === undefined ? {} : { WORKFLOW_AGENT_TIMEOUT_MS: timeout },
    prompts: ["review the change"],
    steps: [
      { when: (r) => isMain(r) && !afterTools(r), reply: reply(WORKFLOW) },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("Reviewed.")) },
      { when: (r) => !isMain(r), reply: answer, repeat: true },
    ],
  });
  return { run, outcome: toolResult(run, 0) };
}

const SECURITY_AUDIT = /^Review this change context for security/;

it("fails the run when an agent's request takes longer than WORKFLOW_AGENT_TIMEOUT_MS", async () => {
  // The security audit's first request waits 3 s for its retry; the limit is 300 ms.
  const { answer } = agents((prompt, asked) =>
    SECURITY_AUDIT.test(prompt) && asked === 1 ? 3000 : 0,
  );
  const { outcome } = await review(answer, "300");
  expect(outcome.task?.status).toBe("failed");
  expect(outcome.result).toEqual({ error: "agent audit:security timed out after 300 ms" });
});

it("journals the agents that answered in time, and a resume asks only for the one that timed out", async () => {
  const { answer, prompts } = agents((prompt, asked) =>
    SECURITY_AUDIT.test(prompt) && asked === 1 ? 3000 : 0,
  );
  const runId = (r: Request) => /wf_review-changes_[0-9a-f]{16}/.exec(JSON.stringify(r))?.[0];
  const run = await runExercise({
    env: { WORKFLOW_AGENT_TIMEOUT_MS: "300" },
    prompts: ["review the change", "resume that run"],
    steps: [
      {
        when: (r) => isMain(r) && lastMentions("review the change")(r) && !afterTools(r),
        reply: reply(WORKFLOW),
      },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("It timed out.")) },
      {
        when: (r) => isMain(r) && lastMentions("resume that run")(r),
        reply: (r) =>
          reply(
            toolUse("Workflow", { name: "review-changes", resume_from_run_id: runId(r) ?? "" }),
          ),
      },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("Resumed.")) },
      { when: (r) => !isMain(r), reply: answer, repeat: true },
    ],
  });
  const first = toolResult(run, 0);
  const journal = readFileSync(
    path.join(run.workdir, ".harness", "workflows", `${first.launched?.runId}.journal.jsonl`),
    "utf8",
  );
  // Three audits and the correctness verification finished in time; the resume adds one.
  expect(first.task?.status).toBe("failed");
  expect(first.task?.usage.agents).toBe(4);
  expect(journal.split("\n").filter(Boolean)).toHaveLength(5);
  const resumed = toolResult(run, 1);
  expect(resumed.task?.status).toBe("completed");
  expect(resumed.result).toEqual({ confirmed: [{ dimension: "correctness", ...OFF_BY_ONE }] });
  // The first run sent 5 requests (4 audits, 1 verification); the resume, one.
  expect(prompts.slice(5)).toHaveLength(1);
  expect(prompts[5]).toMatch(SECURITY_AUDIT);
});

it("gives every agent request the whole limit, not the run", async () => {
  // The correctness audit and then its verification each take about 600 ms: each is within
  // the limit of 1000 ms (with room for a busy machine), the two together are not.
  const { answer } = agents((prompt, asked) =>
    !SECURITY_AUDIT.test(prompt) && /correctness/.test(prompt) && asked === 1 ? 600 : 0,
  );
  const { outcome } = await review(answer, "1000");
  expect(outcome.task?.status).toBe("completed");
  expect(outcome.result).toEqual({ confirmed: [{ dimension: "correctness", ...OFF_BY_ONE }] });
});

it("refuses a WORKFLOW_AGENT_TIMEOUT_MS that is not a positive integer, before any model call", async () => {
  for (const value of ["soon", "0", "1.5"]) {
    const { answer } = agents(() => 0);
    const run = await runExercise({
      env: { WORKFLOW_AGENT_TIMEOUT_MS: value },
      prompts: ["review the change"],
      steps: [{ when: () => true, reply: answer, repeat: true }],
    });
    expect(run.output).toContain(
      `s16: configuration error: WORKFLOW_AGENT_TIMEOUT_MS must be a positive integer (got '${value}')`,
    );
    expect(run.received).toHaveLength(0);
    expect(run.code).toBe(1);
  }
});
