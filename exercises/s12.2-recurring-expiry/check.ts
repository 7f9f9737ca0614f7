/**
 * s12.2: recurring jobs that expire after seven days. Run it with
 * `pnpm course exercise check s12.2`.
 */
import { readFileSync } from "node:fs";
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

/**
 * The clock of every run: Monday 2 March 2026, half a minute past ten, local time. The first
 * tick, when the session starts, looks at 10:00, so a saved `0 10 * * *` job is due at once.
 */
const CLOCK = { HARNESS_CLOCK_START: "2026-03-02T10:00:30" };

/** A saved durable job that runs at 10:00 every day; `fields` override the defaults. */
function savedJob(id: string, fields: Record<string, unknown> = {}) {
  return {
    id,
    cron: "0 10 * * *",
    prompt: `The job ${id}.`,
    recurring: true,
    durable: true,
    pending_delivery: false,
    last_fired: null,
    ...fields,
  };
}

/** One typed line whose answer makes `calls` in turn (one tool call per reply), then ends. */
async function session(
  calls: Array<[string, Record<string, unknown>]>,
  saved: object[] | null = null,
): Promise<RunOutcome> {
  return runExercise({
    files: saved ? { ".harness/cron.json": JSON.stringify(saved) } : {},
    env: CLOCK,
    prompts: ["go"],
    steps: [
      ...calls.map(([name, input], i) => ({
        when: (r: Parameters<typeof afterTools>[0]) => (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: afterTools, reply: reply(text("done")) },
      { reply: reply(text("done")) },
    ],
  });
}

/** The result of the `n`th tool call of a session (0-based). */
function result(run: RunOutcome, n: number): string {
  return String(lastToolResults(run.requests[n + 1]!)[0]!.content);
}

/** .harness/cron.json after the run, by id. */
function savedAfter(run: RunOutcome): Record<string, Record<string, unknown>> {
  const jobs = JSON.parse(readFileSync(path.join(run.workdir, ".harness", "cron.json"), "utf8"));
  return Object.fromEntries(jobs.map((job: { id: string }) => [job.id, job]));
}

it("saves the minute a job was scheduled as created_at", async () => {
  const run = await session([
    ["schedule_cron", { cron: "30 9 * * 1-5", prompt: "Read the stand-up notes." }],
  ]);
  const [job] = Object.values(savedAfter(run));
  expect(job).toMatchObject({
    cron: "30 9 * * 1-5",
    recurring: true,
    created_at: "2026-03-02 10:00",
  });
});

it("runs a recurring job seven days old once more, as a one-shot job, and says so", async () => {
  const run = await session(
    [["list_crons", {}]],
    [savedJob("cron_aaaaaaaa", { created_at: "2026-02-23 10:00" })],
  );
  expect(run.output).toContain("[cron] due cron_aaaaaaaa: The job cron_aaaaaaaa.");
  expect(run.output).toContain(
    "[cron] expired cron_aaaaaaaa: this is its last run (recurring jobs last 7 days)",
  );
  expect(savedAfter(run).cron_aaaaaaaa).toMatchObject({
    recurring: false,
    pending_delivery: true,
    last_fired: "2026-03-02 10:00",
    created_at: "2026-02-23 10:00",
  });
  expect(result(run, 0)).toBe(
    "cron_aaaaaaaa: 0 10 * * * -> The job cron_aaaaaaaa. [one-shot, durable]",
  );
});

it("runs a younger recurring job as before, and a one-shot job never expires", async () => {
  const run = await session(
    [["list_crons", {}]],
    [
      savedJob("cron_bbbbbbbb", { created_at: "2026-02-23 10:01" }),
      savedJob("cron_cccccccc", { recurring: false, created_at: "2026-01-01 08:00" }),
    ],
  );
  expect(run.output).toContain("[cron] due cron_bbbbbbbb: The job cron_bbbbbbbb.");
  expect(run.output).toContain("[cron] due cron_cccccccc: The job cron_cccccccc.");
  expect(run.output).not.toContain("[cron] expired");
  const saved = savedAfter(run);
  expect(saved.cron_bbbbbbbb).toMatchObject({ recurring: true, pending_delivery: true });
  expect(saved.cron_cccccccc).toMatchObject({ recurring: false, pending_delivery: true });
});

it("counts a saved job without created_at from when it is loaded", async () => {
  const run = await session([["list_crons", {}]], [savedJob("cron_dddddddd")]);
  expect(run.output).toContain("[cron] loaded 1 durable job(s)");
  expect(run.output).not.toContain("[cron] expired");
  expect(savedAfter(run).cron_dddddddd).toMatchObject({
    recurring: true,
    pending_delivery: true,
    created_at: "2026-03-02 10:00",
  });
});

it("skips a saved job whose created_at is not a local minute", async () => {
  const run = await session(
    [["list_crons", {}]],
    [savedJob("cron_eeeeeeee", { created_at: "last week" })],
  );
  expect(run.output).toContain(
    "[cron] skipped invalid saved job: cron_eeeeeeee: created_at must be null or 'YYYY-MM-DD HH:MM'",
  );
  expect(result(run, 0)).toBe("No cron jobs.");
});
