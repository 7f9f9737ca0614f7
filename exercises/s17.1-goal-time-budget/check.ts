/**
 * s17.1: a goal with a time budget. Run it with `pnpm course exercise check s17.1`.
 *
 * The runs use `coldCache`: Date.now moves six minutes forward at every answer of the
 * model, so a goal "runs" 18 minutes in three calls without the check waiting for it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  expect,
  it,
  type RunOutcome,
  reply,
  runExercise,
  tempWorkspace,
  text,
} from "../../tests/helpers/exercise.ts";

type Request = RunOutcome["requests"][number];

/** A request from the goal's evaluator: no tools, the evaluator's system prompt. */
const isEvaluator = (request: Request) =>
  !request.tools?.length &&
  JSON.stringify(request.system ?? "").includes("independent completion evaluator");

/** The evaluator's verdict, as the strict JSON it must be. */
const verdict = (ok: boolean, reason: string) =>
  reply(text(JSON.stringify({ ok, reason, impossible: false })));

/** The `[goal]` lines of a run, in order. */
const goalLines = (run: RunOutcome) =>
  run.output.split("\n").filter((line) => line.startsWith("[goal] "));

/** Each record of the workspace's goal.jsonl. */
function records(workdir: string): Array<Record<string, unknown>> {
  return readFileSync(path.join(workdir, ".harness", "goal.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * `/goal tests pass`, then `after`; the main agent stops three times without a tool call,
 * the evaluator answers not yet, not yet, then met. One model answer is six minutes.
 */
function goalRun(env: Record<string, string>, after: string[] = [], workdir?: string) {
  return runExercise({
    workdir,
    env,
    coldCache: true,
    prompts: ["/goal tests pass", ...after],
    steps: [
      { when: isEvaluator, reply: verdict(false, "no test output yet") },
      { when: isEvaluator, reply: verdict(false, "still no test output") },
      { when: isEvaluator, reply: verdict(true, "the output shows 3 passed") },
      { reply: reply(text("Done.")) },
      { reply: reply(text("Really done.")) },
      { reply: reply(text("3 passed.")) },
    ],
  });
}

const TIMEOUT = /^\[goal\] timeout: the goal ran (\d+)s, past its 600s budget$/;

it("ends the goal at a stop once its time budget is spent, without asking the evaluator", async () => {
  const run = await goalRun({ GOAL_TIME_BUDGET: "600" });
  const lines = goalLines(run);
  expect(lines.slice(0, 2)).toEqual(["[goal] set: tests pass", "[goal] block: no test output yet"]);
  expect(lines[2]).toMatch(TIMEOUT);
  expect(Number(TIMEOUT.exec(lines[2]!)?.[1])).toBeGreaterThanOrEqual(600);
  expect(lines).toHaveLength(3);
  // The first stop (6 minutes in) was judged; the second (18 minutes in) was not.
  expect(run.requests.filter(isEvaluator).length).toBe(1);
  expect(run.requests.length).toBe(3);
});

it("records the timeout in goal.jsonl as the goal's end", async () => {
  const run = await goalRun({ GOAL_TIME_BUDGET: "600" });
  const last = records(run.workdir).at(-1)!;
  expect(last).toMatchObject({
    type: "goal_status",
    condition: "tests pass",
    active: false,
    met: false,
    failed: false,
    timedOut: true,
    iterations: 1,
  });
  expect(String(last.reason)).toMatch(/^the goal ran \d+s, past its 600s budget$/);
});

it("/goal says the goal timed out, and a restart does not bring it back", async () => {
  const workdir = tempWorkspace("s17-1");
  const run = await goalRun({ GOAL_TIME_BUDGET: "600" }, ["/goal"], workdir);
  expect(run.output).toMatch(
    /\nGoal timed out: tests pass\nReason: the goal ran \d+s, past its 600s budget\n/,
  );
  const again = await runExercise({ workdir, prompts: ["/goal"], steps: [] });
  expect(again.output).not.toContain("[goal] restored");
  expect(again.output).toMatch(/\nGoal timed out: tests pass\nReason: the goal ran \d+s/);
});

it("judges the goal as before while the budget lasts, and with no budget set", async () => {
  const budgets: Array<Record<string, string>> = [{ GOAL_TIME_BUDGET: "3600" }, {}];
  for (const env of budgets) {
    const run = await goalRun(env);
    expect(goalLines(run)).toEqual([
      "[goal] set: tests pass",
      "[goal] block: no test output yet",
      "[goal] block: still no test output",
      "[goal] achieved: the output shows 3 passed",
    ]);
    expect(run.requests.filter(isEvaluator).length).toBe(3);
  }
});

it("refuses a GOAL_TIME_BUDGET that is not a positive whole number of seconds", async () => {
  for (const value of ["0", "ten"]) {
    const run = await runExercise({ env: { GOAL_TIME_BUDGET: value }, prompts: [], steps: [] });
    expect(run.output).toContain(
      `s17: configuration error: GOAL_TIME_BUDGET must be a positive integer (got '${value}')`,
    );
    expect(run.code).not.toBe(0);
  }
});
