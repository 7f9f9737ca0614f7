/**
 * s12.1: when a job runs next, and expressions that never run. Run it with
 * `pnpm course exercise check s12.1`.
 */
import { existsSync, readFileSync } from "node:fs";
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
  toolUse,
} from "../../tests/helpers/exercise.ts";

/** The clock of every run: Monday 2 March 2026, half a minute past ten, local time. */
const CLOCK = { HARNESS_CLOCK_START: "2026-03-02T10:00:30" };

/** Two durable jobs, as .harness/cron.json keeps them. */
const SAVED = {
  ".harness/cron.json": JSON.stringify([
    {
      id: "cron_aaaaaaaa",
      cron: "15 * * * *",
      prompt: "Check the build.",
      recurring: true,
      durable: true,
      pending_delivery: false,
      last_fired: null,
    },
    {
      id: "cron_bbbbbbbb",
      cron: "0 9 1 * *",
      prompt: "Pay the rent.",
      recurring: false,
      durable: true,
      pending_delivery: false,
      last_fired: null,
    },
  ]),
};

/** `calls` in turn (each the next reply's one tool call), then a final answer. */
async function session(
  calls: Array<[string, Record<string, unknown>]>,
  files: Record<string, string> = {},
): Promise<RunOutcome> {
  // Steps are taken in order, each once: the first answers the typed line, the rest a result.
  return runExercise({
    files,
    env: CLOCK,
    prompts: ["schedule it"],
    steps: [
      ...calls.map(([name, input], i) => ({
        when: (r: Parameters<typeof afterTools>[0]) => (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
}

/** The result of the `n`th tool call of a session (0-based). */
function result(run: RunOutcome, n: number): { content: string; isError: boolean } {
  const block = lastToolResults(run.requests[n + 1]!)[0]!;
  return { content: String(block.content), isError: block.is_error === true };
}

it("answers schedule_cron with the job's next run", async () => {
  const run = await session([
    ["schedule_cron", { cron: "30 9 * * 1-5", prompt: "Read the stand-up notes." }],
    ["schedule_cron", { cron: "*/20 * * * *", prompt: "Look at CI.", durable: false }],
  ]);
  expect(result(run, 0).content).toMatch(
    /^Scheduled cron_[0-9a-f]{8}: 30 9 \* \* 1-5 -> Read the stand-up notes\. \(next run 2026-03-03 09:30\)$/,
  );
  expect(result(run, 1).content).toMatch(
    /^Scheduled cron_[0-9a-f]{8}: \*\/20 \* \* \* \* -> Look at CI\. \(next run 2026-03-02 10:20\)$/,
  );
});

it("shows each job's next run in list_crons", async () => {
  const run = await session([["list_crons", {}]], SAVED);
  expect(result(run, 0).content).toBe(
    [
      "cron_aaaaaaaa: 15 * * * * -> Check the build. [recurring, durable, next run 2026-03-02 10:15]",
      "cron_bbbbbbbb: 0 9 1 * * -> Pay the rent. [one-shot, durable, next run 2026-04-01 09:00]",
    ].join("\n"),
  );
});

it("refuses an expression that never runs in the next year, and registers nothing", async () => {
  const run = await session([
    ["schedule_cron", { cron: "0 9 31 2 *", prompt: "Celebrate February 31st." }],
    ["schedule_cron", { cron: "0 0  29 2 *", prompt: "Leap day." }],
    ["list_crons", {}],
  ]);
  expect(result(run, 0)).toEqual({
    content: "Error: 0 9 31 2 * never runs in the next year",
    isError: true,
  });
  expect(result(run, 1)).toEqual({
    content: "Error: 0 0 29 2 * never runs in the next year",
    isError: true,
  });
  expect(result(run, 2).content).toBe("No cron jobs.");
  expect(existsSync(path.join(run.workdir, ".harness", "cron.json"))).toBe(false);
});

it("still refuses an invalid expression with its field's error first", async () => {
  const run = await session([
    ["schedule_cron", { cron: "61 * * * *", prompt: "Too late." }],
    ["schedule_cron", { cron: "0 9 31 2 *", prompt: "" }],
  ]);
  expect(result(run, 0)).toEqual({
    content: "Error: minute: Value 61 is outside [0-59]",
    isError: true,
  });
  expect(result(run, 1)).toEqual({ content: "Error: Prompt cannot be empty", isError: true });
});

it("keeps the durable file as it was: the next run is shown, not saved", async () => {
  const run = await session([
    ["schedule_cron", { cron: "0 12 * * *", prompt: "Lunch." }],
    ["list_crons", {}],
  ]);
  const saved = JSON.parse(readFileSync(path.join(run.workdir, ".harness", "cron.json"), "utf8"));
  expect(Object.keys(saved[0]).sort()).toEqual([
    "cron",
    "durable",
    "id",
    "last_fired",
    "pending_delivery",
    "prompt",
    "recurring",
  ]);
  expect(result(run, 1).content).toMatch(/ \[recurring, durable, next run 2026-03-02 12:00\]$/);
});
