/**
 * s17.2: a turn that fails on an error ends the goal. Run it with
 * `pnpm course exercise check s17.2`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  apiError,
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

/** True when the main agent's request ends with this text from the user. */
const lastSaid = (words: string) => (request: Request) =>
  (request.tools?.length ?? 0) > 0 && JSON.stringify(request.messages.at(-1)).includes(words);

/** The `[goal]` lines of a run, in order. */
const goalLines = (run: RunOutcome) =>
  run.output.split("\n").filter((line) => line.startsWith("[goal] "));

/** The API's answer that ends the turn: a 400, which s15's recovery does not retry. */
const REJECTED = apiError(400, "invalid_request_error", "messages: the request is malformed");
const ERROR = "API error 400 invalid_request_error: messages: the request is malformed";
/** What `/goal` prints once the failure has ended the goal. */
const STOPPED = `s17 >> /goal\nGoal stopped: tests pass\nReason: the turn failed: ${ERROR}\n`;

/**
 * `/goal tests pass`, then `after`: the first stop is judged not yet, and the model call
 * after the block fails with REJECTED. Later lines get "Hi." and the verdict "greeted".
 */
function failingGoal(after: string[] = [], workdir?: string) {
  return runExercise({
    workdir,
    prompts: ["/goal tests pass", ...after],
    steps: [
      { when: isEvaluator, reply: verdict(false, "no test output yet") },
      { when: lastSaid('"tests pass"'), reply: reply(text("Done.")) },
      { when: lastSaid("no test output yet"), reply: REJECTED },
      { when: isEvaluator, reply: verdict(true, "greeted") },
      { reply: reply(text("Hi.")) },
    ],
  });
}

it("ends the goal when its turn fails on an API error, and says why after the error", async () => {
  const run = await failingGoal();
  expect(goalLines(run)).toEqual([
    "[goal] set: tests pass",
    "[goal] block: no test output yet",
    `[goal] stopped: the turn failed: ${ERROR}`,
  ]);
  const red = run.output.indexOf(`${ERROR} (this turn was discarded`);
  expect(red).toBeGreaterThan(-1);
  expect(red).toBeLessThan(run.output.indexOf("[goal] stopped"));
});

it("records the stop in goal.jsonl: a restart does not bring the goal back, and /goal says why", async () => {
  const workdir = tempWorkspace("s17-2");
  await failingGoal([], workdir);
  const lines = readFileSync(path.join(workdir, ".harness", "goal.jsonl"), "utf8")
    .trim()
    .split("\n");
  expect(JSON.parse(lines.at(-1)!)).toMatchObject({
    type: "goal_status",
    condition: "tests pass",
    active: false,
    met: false,
    failed: false,
    stopped: true,
    reason: `the turn failed: ${ERROR}`,
  });
  const again = await runExercise({ workdir, prompts: ["/goal"], steps: [] });
  expect(again.output).not.toContain("[goal] restored");
  expect(again.output).toContain(STOPPED);
});

it("does not judge the next turn once the goal has stopped, and /goal says how it ended", async () => {
  const run = await failingGoal(["hello", "/goal"]);
  expect(run.output).toContain("s17 >> hello\nHi.\n");
  // One evaluation, the first stop's: the turn after the failure is not judged.
  expect(run.requests.filter(isEvaluator).length).toBe(1);
  expect(goalLines(run)).toHaveLength(3);
  expect(run.output).toContain(STOPPED);
});

it("keeps the goal when only the evaluator fails", async () => {
  const run = await runExercise({
    prompts: ["/goal tests pass", "/goal"],
    steps: [
      { when: isEvaluator, reply: reply(text("Looks fine to me.")) },
      { reply: reply(text("Done.")) },
    ],
  });
  expect(goalLines(run)).toEqual([
    "[goal] set: tests pass",
    "[goal] error: GoalError: goal evaluator returned invalid JSON",
  ]);
  expect(run.output).toContain("s17 >> /goal\nGoal active: tests pass\n");
});

it("says nothing of a goal when a turn without one fails", async () => {
  const run = await runExercise({ prompts: ["hello"], steps: [{ reply: REJECTED }] });
  expect(run.output).toContain(`${ERROR} (this turn was discarded`);
  expect(goalLines(run)).toEqual([]);
});
