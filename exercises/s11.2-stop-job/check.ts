/**
 * s11.2: stopping a background job by its ID. Run it with `pnpm course exercise check s11.2`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

type Call = [string, Record<string, unknown>];

/** One reply per entry of `rounds` (its calls, in order), then a final answer. */
async function session(rounds: Call[][], prompts = ["go"]): Promise<RunOutcome> {
  // Steps are taken in order, each once: the first answers the typed line, the rest results.
  return runExercise({
    prompts,
    steps: [
      ...rounds.map((calls, i) => ({
        when: (r: Parameters<typeof afterTools>[0]) => (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(...calls.map(([name, input]) => toolUse(name, input))),
      })),
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
}

/** The results of round `n` (0-based), in call order. */
function results(run: RunOutcome, n: number): Array<{ content: string; isError: boolean }> {
  return lastToolResults(run.requests[n + 1]!).map((r) => ({
    content: String(r.content),
    isError: r.is_error === true,
  }));
}

const background = (command: string): Call => ["bash", { command, run_in_background: true }];
const stop = (id: string): Call => ["stop_job", { task_id: id }];

it("offers the model stop_job, which takes a task_id", async () => {
  const run = await session([]);
  expect(toolNames(run.requests[0]!)).toContain("stop_job");
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "stop_job")!;
  expect(Object.keys(tool.input_schema.properties)).toEqual(["task_id"]);
  expect(tool.input_schema.required).toEqual(["task_id"]);
});

it("stops a running job: the answer names it, and its command never finishes", async () => {
  const command = "sleep 1; echo late > late.txt";
  const run = await session([
    [background(command)],
    [stop("bg_0001")],
    [["bash", { command: "sleep 2" }]],
  ]);
  expect(results(run, 1)).toEqual([{ content: `Stopped bg_0001: ${command}`, isError: false }]);
  expect(existsSync(path.join(run.workdir, "late.txt"))).toBe(false);
});

it("sends no notification for a stopped job, and /bg lists it as stopped", async () => {
  const run = await session([[background("sleep 30")], [stop("bg_0001")]], ["stop it", "/bg"]);
  expect(results(run, 1)[0]!.content).toBe("Stopped bg_0001: sleep 30");
  const notified = run.requests.some((r) =>
    JSON.stringify(r.messages).includes("<task_notification>"),
  );
  expect(notified, "a request carried a <task_notification>").toBe(false);
  expect(run.output).toMatch(/^bg_0001 {2}stopped {4}\s*\d+\.\ds {2}sleep 30$/m);
});

it("refuses a job that has already ended, and one that does not exist", async () => {
  const run = await session([
    [background("echo hi")],
    [["bash", { command: "sleep 0.5" }], stop("bg_0001"), stop("bg_0009")],
  ]);
  expect(results(run, 1).slice(1)).toEqual([
    { content: "Error: Job bg_0001 is not running (completed)", isError: true },
    { content: "Error: No background job with ID bg_0009", isError: true },
  ]);
});
