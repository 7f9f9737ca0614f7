/**
 * Cron, against every chapter from s12: expressions (each error names its field; names,
 * steps, 0 and 7 as Sunday, day-of-month OR day-of-week, through croner), the job store
 * (snake_case pretty JSON, atomic saves that roll back, corrupt files left alone, invalid
 * items kept verbatim), the tick (once per minute, missed minutes, no replay of downtime, a
 * repeated DST minute once), delivery (one event, one scheduled turn, acknowledgement after
 * the first response, backoff after a failure), and through the chapter: the eighteen tools,
 * the Scheduling section and the clock line, idle-only delivery, the 500 that re-queues,
 * the scheduled turn's approval denial, restarts. Time comes from a fake clock, or from
 * HARNESS_CLOCK_START set just before a minute boundary, so nothing waits a real minute.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import {
  apiError,
  modelView,
  reply,
  ScriptedModel,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type { Turn } from "../chapters/s12-cron/src/contract.ts";
import type * as CronModule from "../chapters/s12-cron/src/cron.ts";
import type * as ParseModule from "../chapters/s12-cron/src/cron-parse.ts";
import type * as SchedulerModule from "../chapters/s12-cron/src/cron-scheduler.ts";
import type * as StoreModule from "../chapters/s12-cron/src/cron-store.ts";
import {
  attemptsPerCall,
  BASE_TOOLS,
  carried,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
  S10_TOOLS,
} from "./chapters.ts";
import { runContext } from "./helpers/context.ts";
import {
  afterTools,
  type Capture,
  delegateOnce,
  everyAttempt,
  lastToolResults,
  type RunOptions,
  runChapter,
  runTyped,
  sessionLog,
  tempWorkspace,
  toolNames,
  userSaid,
  writeFiles,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
type Job = StoreModule.CronJob;

const CRON_FILE = path.join(".harness", "cron.json");
const CRON_TOOLS = ["schedule_cron", "list_crons", "cancel_cron"];
const SCHEDULING =
  "Scheduling: schedule_cron runs a prompt at a future local time. Fields: minute hour " +
  "day-of-month month day-of-week. For a one-off reminder compute the exact minute and set " +
  "recurring to false. Durable jobs survive restarts. A scheduled prompt runs later as its " +
  "own turn and cannot ask the user for approval.";
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** Milliseconds of a local date-time such as 2026-03-01T09:00 (2026-03-01 is a Sunday). */
const local = (iso: string) => new Date(iso).getTime();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const blocksOf = (r: Request): Anthropic.ContentBlockParam[] => {
  const content = r.messages.at(-1)?.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
};
/** A request whose last message is a scheduled turn's input. */
const isScheduled = (r: Request) =>
  blocksOf(r).some((b) => b.type === "text" && b.text.startsWith("[Scheduled]"));
const mentionsScheduled = (r: Request) => JSON.stringify(r.messages).includes("[Scheduled]");
const results = (r: Request) => lastToolResults(r).map((b) => [b.content, b.is_error]);

/** A saved job as a person (or a previous session) would have written it. */
function saved(id: string, fields: Partial<Job> = {}): Job {
  return {
    id,
    cron: "0 9 * * *",
    prompt: `prompt of ${id}`,
    recurring: true,
    durable: true,
    pending_delivery: false,
    last_fired: null,
    ...fields,
  };
}
const fileOf = (items: unknown[]) => `${JSON.stringify(items, null, 2)}\n`;

/** The typed `lines`, then the input ends once the output shows `until` (and `thenMs` more). */
function runHeld(
  chapter: Parameters<typeof runChapter>[0],
  options: RunOptions & { lines: string[]; until: string; thenMs?: number },
) {
  const typing = [
    ...options.lines.map((line) => ({ line })),
    { after: options.until, waitMs: options.thenMs, line: null },
  ];
  return runTyped(chapter, { ...options, typing });
}

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(
  moduleVersions("s12", ["cron-parse.ts", "cron-store.ts", "cron-scheduler.ts", "cron.ts"]).map(
    (c) => c.id,
  ),
);
// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the contract runs on every chapter (runsEdgeCases in chapters.ts). repl.ts runs the
// scheduled turns, recovery.ts retries the 500 and permissions.ts denies in a scheduled turn.
const CRON = moduleVersions("s12", [
  "cron-parse.ts",
  "cron-store.ts",
  "cron-scheduler.ts",
  "cron.ts",
  "repl.ts",
  "recovery.ts",
  "permissions.ts",
  "permission-rules.ts",
]);

describe.each(carried(chaptersFrom("s12"), MODULE_CHAPTERS, CRON))("$id cron", (chapter) => {
  let parse: typeof ParseModule;
  let scheduling: typeof SchedulerModule;
  let cron: typeof CronModule;

  /** A scheduler on a fake clock that stays where the test puts it. */
  function scheduler(options: { workdir?: string; at?: string; ids?: string[] } = {}) {
    const workdir = options.workdir ?? tempWorkspace("cron");
    const clock = { t: local(options.at ?? "2026-03-01T09:00:10") };
    const lines: string[] = [];
    const ids = options.ids;
    const s = new scheduling.CronScheduler({
      workdir,
      now: () => clock.t,
      say: (line) => lines.push(line),
      ...(ids ? { newId: () => ids.shift() ?? "ffffffff" } : {}),
    });
    const file = path.join(workdir, CRON_FILE);
    const onDisk = () => JSON.parse(readFileSync(file, "utf8")) as unknown[];
    const add = (cronText: string, fields: Partial<SchedulerModule.ScheduleInput> = {}) => {
      const out = s.schedule({
        cron: cronText,
        prompt: `run ${cronText}`,
        recurring: true,
        durable: false,
        ...fields,
      });
      if (out.isError) throw new Error(out.content);
      return /cron_[0-9a-f]{8}/.exec(out.content)![0];
    };
    return { s, clock, lines, file, onDisk, workdir, add };
  }

  if (MODULE_CHAPTERS.has(chapter.id)) {
    beforeAll(async () => {
      parse = await importChapter<typeof ParseModule>(chapter, "cron-parse.ts");
      scheduling = await importChapter<typeof SchedulerModule>(chapter, "cron-scheduler.ts");
      cron = await importChapter<typeof CronModule>(chapter, "cron.ts");
    });

    // -------------------------------------------------------------------------------------
    describe("expressions", () => {
      const matches = (expr: string, iso: string) => parse.cronMatches(expr, new Date(iso));

      it("R1–R2: minute, hour, lists, ranges and steps match only their minutes", () => {
        expect(matches("0 9 * * *", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * * *", "2026-03-01T09:00:59")).toBe(true);
        expect(matches("0 9 * * *", "2026-03-01T09:01")).toBe(false);
        expect(matches("0 9 * * *", "2026-03-01T10:00")).toBe(false);
        expect(matches("*/15 * * * *", "2026-03-01T09:30")).toBe(true);
        expect(matches("*/15 * * * *", "2026-03-01T09:31")).toBe(false);
        expect(matches("0,30 9 * * *", "2026-03-01T09:30")).toBe(true);
        expect(matches("0 9-17 * * *", "2026-03-01T17:00")).toBe(true);
        expect(matches("0 9-17 * * *", "2026-03-01T18:00")).toBe(false);
        expect(matches("10-20/5 * * * *", "2026-03-01T09:15")).toBe(true);
        expect(matches("10-20/5 * * * *", "2026-03-01T09:16")).toBe(false);
      });

      it("R3: a four-field expression never matches and is refused", () => {
        expect(matches("0 9 * *", "2026-03-01T09:00")).toBe(false);
        expect(parse.cronError("0 9 * *")).toBe("Expected 5 fields, got 4");
      });

      it("R4: day-of-month OR day-of-week when both are restricted; one restricted decides", () => {
        // 2026-03-01 is a Sunday, 03-03 a Tuesday, 03-04 a Wednesday.
        expect(matches("0 9 1 * 2", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 1 * 2", "2026-03-03T09:00")).toBe(true);
        expect(matches("0 9 1 * 2", "2026-03-04T09:00")).toBe(false);
        expect(matches("0 9 1 * *", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 1 * *", "2026-03-03T09:00")).toBe(false);
        expect(matches("0 9 * * 0", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * * 0", "2026-03-02T09:00")).toBe(false);
        // A stepped day-of-month is restricted too: OR with the day of week.
        expect(matches("0 9 */2 * 1", "2026-03-02T09:00")).toBe(true);
        expect(matches("0 9 */2 * 1", "2026-03-04T09:00")).toBe(false);
      });

      it("R12: a step counts from the start of its range (*/2 in day-of-month is 1, 3, 5 …)", () => {
        expect(matches("0 0 */2 * *", "2026-03-01T00:00")).toBe(true);
        expect(matches("0 0 */2 * *", "2026-03-02T00:00")).toBe(false);
        expect(matches("0 0 */2 * *", "2026-03-03T00:00")).toBe(true);
        expect(matches("0 0 1 */2 *", "2026-03-01T00:00")).toBe(true);
        expect(matches("0 0 1 */2 *", "2026-04-01T00:00")).toBe(false);
      });

      it("names in any case, 0 and 7 as Sunday, stepped ranges", () => {
        expect(matches("0 9 * * 7", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * * 7", "2026-03-02T09:00")).toBe(false);
        expect(matches("0 9 * * sun", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * * MON-FRI", "2026-03-02T09:00")).toBe(true);
        expect(matches("0 9 * * MON-FRI", "2026-03-01T09:00")).toBe(false);
        expect(matches("0 9 * * 5-7", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * Mar *", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * JAN-DEC/2 *", "2026-03-01T09:00")).toBe(true);
        expect(matches("0 9 * JAN-DEC/2 *", "2026-04-01T09:00")).toBe(false);
        expect(matches("1-5/2 * * * *", "2026-03-01T09:03")).toBe(true);
        expect(matches("1-5/2 * * * *", "2026-03-01T09:04")).toBe(false);
        for (const valid of ["* * * * 7", "* * * JAN *", "1-5/2 * * * *", "0  9\t* * *"]) {
          expect(parse.cronError(valid), valid).toBeNull();
        }
        expect(parse.validateCron("0 9 * feb-mar sun,SAT")).toBe("0 9 * 2-3 0,6");
      });

      it("R11: each error names its field", () => {
        const cases: Array<[string, string]> = [
          ["* * * *", "Expected 5 fields, got 4"],
          ["* * * * * *", "Expected 5 fields, got 6"],
          ["", "Expected 5 fields, got 0"],
          ["@daily", "Expected 5 fields, got 1"],
          ["60 * * * *", "minute: Value 60 is outside [0-59]"],
          ["61 * * * *", "minute: Value 61 is outside [0-59]"],
          ["*/0 * * * *", "minute: Invalid step: */0"],
          ["*/61 * * * *", "minute: Invalid step: */61"],
          ["5/15 * * * *", "minute: Invalid step: 5/15"],
          ["5-1 * * * *", "minute: Range start is greater than end: 5-1"],
          ["0 20-25 * * *", "hour: Range 20-25 is outside [0-23]"],
          ["0 24 * * *", "hour: Value 24 is outside [0-23]"],
          ["* * 0 * *", "day-of-month: Value 0 is outside [1-31]"],
          ["* * 1,,2 * *", "day-of-month: Invalid field: 1,,2"],
          ["* * L * *", "day-of-month: Invalid field: L"],
          ["* * 15W * *", "day-of-month: Invalid field: 15W"],
          ["* * ? * *", "day-of-month: Invalid field: ?"],
          ["* * * FOO *", "month: Invalid field: FOO"],
          ["* * * 13 *", "month: Value 13 is outside [1-12]"],
          ["* * * MON *", "month: Invalid field: MON"],
          ["* * * * 8", "day-of-week: Value 8 is outside [0-7]"],
          ["* * * * FRI#2", "day-of-week: Invalid field: FRI#2"],
          ["* * * * 5L", "day-of-week: Invalid field: 5L"],
          ["* * * * +1", "day-of-week: Invalid field: +1"],
          ["* * * * SAT-SUN", "day-of-week: Range start is greater than end: SAT-SUN"],
          ["* * * * a-b", "day-of-week: Invalid range: a-b"],
        ];
        for (const [expr, error] of cases) expect(parse.cronError(expr), expr).toBe(error);
      });

      it("refuses a range or a step with anything but numbers and names, and a day-of-month range from 0", () => {
        const cases: Array<[string, string]> = [
          ["x-5 * * * *", "minute: Invalid range: x-5"],
          ["0-x * * * *", "minute: Invalid range: 0-x"],
          ["*/5x * * * *", "minute: Invalid step: */5x"],
          ["*/-1 * * * *", "minute: Invalid step: */-1"],
          ["1-5/0 * * * *", "minute: Invalid step: 1-5/0"],
          ["* * 0-5 * *", "day-of-month: Range 0-5 is outside [1-31]"],
          ["* * 1-32 * *", "day-of-month: Range 1-32 is outside [1-31]"],
          ["* */25 * * *", "hour: Invalid step: */25"],
          ["* * */32 * *", "day-of-month: Invalid step: */32"],
          ["* * * */13 *", "month: Invalid step: */13"],
          ["* * * * */8", "day-of-week: Invalid step: */8"],
          ["* * * 0 *", "month: Value 0 is outside [1-12]"],
          ["* * * * 1,", "day-of-week: Invalid field: 1,"],
          ["*/x5 * * * *", "minute: Invalid step: */x5"],
          ["1-5/2x * * * *", "minute: Invalid step: 1-5/2x"],
        ];
        for (const [expr, error] of cases) expect(parse.cronError(expr), expr).toBe(error);
      });

      it("takes the step edges of every field and every month and day name", () => {
        for (const valid of [
          "*/1 * * * *",
          "*/60 * * * *",
          "* */24 * * *",
          "* * */31 * *",
          "* * * */12 *",
          "* * * * */7",
          "59 23 31 12 7",
          "0 0 1 1 0",
          "5-5 * * * *",
          "* * * MAR-MAR SUN-SUN",
        ]) {
          expect(parse.cronError(valid), valid).toBeNull();
        }
        expect(parse.validateCron("0 0 * jan,FEB,Mar,apr,MAY,jun,JUL,aug,SEP,oct,NOV,dec *")).toBe(
          "0 0 * 1,2,3,4,5,6,7,8,9,10,11,12 *",
        );
        expect(parse.validateCron("0 0 * * sun,MON,tue,WED,thu,FRI,sat")).toBe(
          "0 0 * * 0,1,2,3,4,5,6",
        );
        expect(parse.validateCron("0 0 * APR-NOV/3 TUE-THU")).toBe("0 0 * 4-11/3 2-4");
        // 2026-03-03 is a Tuesday, 03-05 a Thursday, 03-06 a Friday.
        expect(matches("0 9 * * TUE-THU", "2026-03-05T09:00")).toBe(true);
        expect(matches("0 9 * * TUE-THU", "2026-03-06T09:00")).toBe(false);
        expect(matches("0 9 1 APR-NOV *", "2026-11-01T09:00")).toBe(true);
        expect(matches("0 9 1 APR-NOV *", "2026-12-01T09:00")).toBe(false);
      });
    });

    // -------------------------------------------------------------------------------------
    describe("the store and the scheduler", () => {
      it("R5: a durable job is saved as pretty snake_case JSON; a session job is not; refusals register nothing", () => {
        const t = scheduler({ ids: ["0000000a", "0000000b"] });
        const durable = t.s.schedule({
          cron: " 0  9 * * 1-5 ",
          prompt: "standup notes",
          recurring: true,
          durable: true,
        });
        expect(durable).toEqual({
          content: "Scheduled cron_0000000a: 0 9 * * 1-5 -> standup notes",
        });
        const session = t.s.schedule({
          cron: "30 9 * * *",
          prompt: "coffee",
          recurring: false,
          durable: false,
        });
        expect(session.content).toBe("Scheduled cron_0000000b: 30 9 * * * -> coffee");
        expect(readFileSync(t.file, "utf8")).toBe(
          fileOf([
            {
              id: "cron_0000000a",
              cron: "0 9 * * 1-5",
              prompt: "standup notes",
              recurring: true,
              durable: true,
              pending_delivery: false,
              last_fired: null,
            },
          ]),
        );
        expect(readFileSync(t.file, "utf8")).toContain('\n  {\n    "id": "cron_0000000a",');
        const refused = [
          t.s.schedule({ cron: "61 * * * *", prompt: "x", recurring: true, durable: true }),
          t.s.schedule({ cron: "0 9 * * *", prompt: "  ", recurring: true, durable: true }),
        ];
        expect(refused).toEqual([
          { content: "Error: minute: Value 61 is outside [0-59]", isError: true },
          { content: "Error: Prompt cannot be empty", isError: true },
        ]);
        expect([...t.s.store.jobs.keys()]).toEqual(["cron_0000000a", "cron_0000000b"]);
        expect(t.s.list()).toBe(
          [
            "cron_0000000a: 0 9 * * 1-5 -> standup notes [recurring, durable]",
            "cron_0000000b: 30 9 * * * -> coffee [one-shot, session]",
          ].join("\n"),
        );
        expect(t.lines).toEqual([
          "  [cron] scheduled cron_0000000a: 0 9 * * 1-5 -> standup notes",
          "  [cron] scheduled cron_0000000b: 30 9 * * * -> coffee",
        ]);
        expect(t.s.cancel("cron_0000000a")).toEqual({ content: "Cancelled cron_0000000a" });
        expect(t.s.cancel("cron_0000000a")).toEqual({
          content: "Job cron_0000000a not found",
          isError: true,
        });
        expect(t.onDisk()).toEqual([]);
        expect(t.s.cancel("cron_0000000b").content).toBe("Cancelled cron_0000000b");
        expect(t.s.list()).toBe("No cron jobs.");
        expect(t.lines.slice(2)).toEqual([
          "  [cron] cancelled cron_0000000a",
          "  [cron] cancelled cron_0000000b",
        ]);
      });

      it("draws a new ID while it is taken, and gives up after 100 tries", () => {
        const t = scheduler({ ids: ["0000000a", "0000000a", "0000000b"] });
        t.add("0 9 * * *");
        expect(t.add("0 9 * * *")).toBe("cron_0000000b");
        const stuck = scheduler({ ids: [] });
        stuck.add("0 9 * * *");
        expect(
          stuck.s.schedule({ cron: "0 9 * * *", prompt: "p", recurring: true, durable: false }),
        ).toEqual({ content: "Error: Could not allocate a cron job ID", isError: true });
      });

      it("R6: loads valid jobs, queues pending ones, reports and skips invalid items, and writes them back verbatim", () => {
        const workdir = tempWorkspace("cron-load");
        const bad = [
          saved("cron_00000002", { cron: "99 9 * * *" }),
          { ...saved("cron_00000003"), id: "job_a" },
          saved("cron_00000004", { prompt: "  " }),
          5,
          { ...saved("cron_00000005"), owner: "me" },
          saved("cron_00000001"),
        ];
        const items = [
          saved("cron_00000001", { last_fired: "2026-02-28 09:00" }),
          bad[0],
          saved("cron_0000000f", { pending_delivery: true, cron: "0 3 * * *" }),
          ...bad.slice(1),
        ];
        writeFiles(workdir, { [CRON_FILE]: fileOf(items) });
        const t = scheduler({ workdir, ids: ["0000000a"] });
        expect(t.s.start()).toEqual([
          {
            text: "[cron] skipped invalid saved job: cron_00000002: cron '99 9 * * *': minute: Value 99 is outside [0-59]",
            tone: "warn",
          },
          {
            text: '[cron] skipped invalid saved job: id must be a string starting with cron_ (got "job_a")',
            tone: "warn",
          },
          {
            text: "[cron] skipped invalid saved job: cron_00000004: prompt must be a non-empty string",
            tone: "warn",
          },
          { text: "[cron] skipped invalid saved job: not a JSON object", tone: "warn" },
          { text: "[cron] skipped invalid saved job: unknown key 'owner'", tone: "warn" },
          {
            text: "[cron] skipped invalid saved job: cron_00000001: duplicate id",
            tone: "warn",
          },
          { text: "[cron] loaded 2 durable job(s); 1 pending, re-queued", tone: "dim" },
        ]);
        expect([...t.s.store.jobs.keys()]).toEqual(["cron_00000001", "cron_0000000f"]);
        expect(t.s.store.jobs.get("cron_00000001")!.last_fired).toBe("2026-02-28 09:00");
        expect(t.s.queue.map((job) => job.id)).toEqual(["cron_0000000f"]);
        t.add("0 12 * * *", { durable: true });
        const [first, ...rest] = t.onDisk();
        expect(first).toEqual(items[0]);
        expect(rest.slice(0, -1)).toEqual(items.slice(1));
        expect(rest.at(-1)).toMatchObject({ id: "cron_0000000a", cron: "0 12 * * *" });
        const empty = scheduler();
        expect(empty.s.start()).toEqual([]);
        expect(existsSync(path.join(empty.workdir, ".harness"))).toBe(false);
      });

      it("R7: a due job is queued once per minute, stays registered until acknowledged, and never twice while pending", () => {
        const t = scheduler({ at: "2026-03-01T08:59:50" });
        const oneShot = t.add("0 9 * * *", { recurring: false, durable: true });
        t.s.tick();
        expect(t.s.queue).toEqual([]);
        t.clock.t = local("2026-03-01T09:00:01");
        t.s.tick();
        t.clock.t = local("2026-03-01T09:00:40");
        t.s.tick();
        expect(t.s.queue.map((job) => job.id)).toEqual([oneShot]);
        expect(t.onDisk()[0]).toMatchObject({
          pending_delivery: true,
          last_fired: "2026-03-01 09:00",
        });
        expect(t.lines.at(-1)).toBe(`  [cron] due ${oneShot}: run 0 9 * * *`);
        t.clock.t = local("2026-03-01T09:01:00");
        t.s.tick();
        expect(t.s.queue).toHaveLength(1);
        // Taken but not acknowledged: still registered, still pending, not queued the next day.
        const taken = t.s.take();
        expect(t.s.store.jobs.has(oneShot)).toBe(true);
        t.clock.t = local("2026-03-02T09:00:05");
        t.s.tick();
        expect(t.s.queue).toEqual([]);
        expect(taken[0]!.last_fired).toBe("2026-03-01 09:00");
      });

      it("R8: acknowledgement removes a one-shot job and clears a recurring one's flag; restore re-queues; both skip a cancelled job", () => {
        const t = scheduler({ at: "2026-03-01T09:00:05" });
        const once = t.add("0 9 * * *", { recurring: false, durable: true });
        const daily = t.add("0 9 * * *", { durable: true });
        const gone = t.add("0 9 * * *", { durable: true });
        t.s.tick();
        const jobs = t.s.take();
        expect(jobs.map((job) => job.id)).toEqual([once, daily, gone]);
        t.s.cancel(gone);
        t.s.restore(jobs);
        expect(t.s.queue.map((job) => job.id)).toEqual([once, daily]);
        expect(t.s.queue.every((job) => job.pending_delivery)).toBe(true);
        t.s.take();
        expect(t.s.acknowledge(jobs)).toBe(true);
        expect([...t.s.store.jobs.keys()]).toEqual([daily]);
        expect(t.onDisk()).toEqual([
          expect.objectContaining({
            id: daily,
            pending_delivery: false,
            last_fired: "2026-03-01 09:00",
          }),
        ]);
        t.clock.t = local("2026-03-01T09:00:50");
        t.s.tick();
        expect(t.s.queue).toEqual([]);
        t.clock.t = local("2026-03-02T09:00:00");
        t.s.tick();
        expect(t.s.queue.map((job) => job.id)).toEqual([daily]);
      });

      it("missed minutes: a late tick evaluates every minute since the last one, at most 60", () => {
        const t = scheduler({ at: "2026-03-01T09:00:30" });
        const skipped = t.add("2 9 * * *");
        const every = t.add("* * * * *");
        t.s.tick();
        expect(t.s.take().map((job) => job.id)).toEqual([every]);
        t.s.acknowledge([t.s.store.jobs.get(every)!]);
        // The event loop was busy from 09:00:30 to 09:03:10: 09:02 was never looked at live.
        t.clock.t = local("2026-03-01T09:03:10");
        t.s.tick();
        const due = t.s.take();
        expect(due.map((job) => job.id)).toEqual([every, skipped]);
        // Coalesced: one firing for the four minutes, the first one it saw.
        expect(due[0]!.last_fired).toBe("2026-03-01 09:01");
        expect(due[1]!.last_fired).toBe("2026-03-01 09:02");

        const late = scheduler({ at: "2026-03-01T07:00:00" });
        const tooOld = late.add("0 8 * * *");
        const inWindow = late.add("15 8 * * *");
        late.s.tick();
        late.clock.t = local("2026-03-01T09:10:00");
        late.s.tick();
        expect(late.s.queue.map((job) => job.id)).toEqual([inWindow]);
        expect(late.s.store.jobs.get(tooOld)!.last_fired).toBeNull();
      });

      it("downtime is not replayed: the first tick looks at the current minute only", () => {
        const workdir = tempWorkspace("cron-down");
        writeFiles(workdir, {
          [CRON_FILE]: fileOf([
            saved("cron_00000001", { cron: "5 9 * * *" }),
            saved("cron_00000002", { cron: "10 9 * * *" }),
          ]),
        });
        const t = scheduler({ workdir, at: "2026-03-01T09:10:20" });
        t.s.start();
        t.s.tick();
        expect(t.s.queue.map((job) => job.id)).toEqual(["cron_00000002"]);
      });

      it("a repeated DST minute fires once (last_fired)", () => {
        const zone = process.env.TZ;
        // Synchronous from here to the end: no other test runs while TZ is changed.
        process.env.TZ = "America/New_York";
        try {
          const t = scheduler({ at: "2026-11-01T00:50:00" });
          const id = t.add("30 1 * * *");
          const start = new Date(2026, 10, 1, 0, 50).getTime();
          const fired: string[] = [];
          // 00:50 EDT to 02:10 EST: 01:00–01:59 happens twice.
          for (let ms = start; ms <= start + 140 * 60_000; ms += 60_000) {
            t.s.tick(ms);
            const jobs = t.s.take();
            for (const job of jobs) fired.push(`${job.last_fired} ${new Date(ms).toString()}`);
            t.s.acknowledge(jobs);
          }
          expect(fired).toHaveLength(1);
          expect(fired[0]).toMatch(/^2026-11-01 01:30 .*GMT-0400/);
          expect(t.s.store.jobs.get(id)!.last_fired).toBe("2026-11-01 01:30");
        } finally {
          if (zone === undefined) delete process.env.TZ;
          else process.env.TZ = zone;
        }
      });

      it("R13: a failed save (the rename fails) leaves every job as it was and no temp file", () => {
        const t = scheduler({ at: "2026-03-01T08:59:30", ids: ["0000000a", "0000000b"] });
        const kept = t.add("0 9 * * *", { durable: true });
        // From now on .harness/cron.json is a folder: writing the temp file works, the rename fails.
        rmSync(t.file);
        mkdirSync(path.join(t.file, "in-the-way"), { recursive: true });
        const failed = t.s.schedule({
          cron: "0 10 * * *",
          prompt: "p",
          recurring: true,
          durable: true,
        });
        expect(failed.isError).toBe(true);
        expect(failed.content).toMatch(/^Error: could not save \.harness\/cron\.json: /);
        expect([...t.s.store.jobs.keys()]).toEqual([kept]);
        expect(t.s.cancel(kept).content).toMatch(/^Error: could not save \.harness\/cron\.json: /);
        expect([...t.s.store.jobs.keys()]).toEqual([kept]);
        t.clock.t = local("2026-03-01T09:00:00");
        t.s.tick();
        expect(t.s.queue).toEqual([]);
        expect(t.s.store.jobs.get(kept)).toMatchObject({
          pending_delivery: false,
          last_fired: null,
        });
        expect(t.lines.at(-1)).toMatch(
          new RegExp(
            `^ {2}\\[cron\\] could not enqueue ${kept}: could not save \\.harness/cron\\.json: `,
          ),
        );
        // A session job needs no save.
        expect(t.add("0 10 * * *")).toMatch(/^cron_/);
        expect(readdirSync(path.dirname(t.file)).filter((name) => name.endsWith(".tmp"))).toEqual(
          [],
        );
      });

      it("acknowledgement that cannot be saved is rolled back and the jobs re-queued", () => {
        const t = scheduler({ at: "2026-03-01T09:00:05" });
        const once = t.add("0 9 * * *", { recurring: false, durable: true });
        t.s.tick();
        const jobs = t.s.take();
        rmSync(t.file);
        mkdirSync(path.join(t.file, "in-the-way"), { recursive: true });
        expect(t.s.acknowledge(jobs)).toBe(false);
        expect(t.s.store.jobs.get(once)).toMatchObject({ pending_delivery: true });
        expect(t.s.queue.map((job) => job.id)).toEqual([once]);
        expect(t.lines.at(-1)).toMatch(/^ {2}\[cron\] acknowledgement failed: could not save/);
      });

      it.each([
        ["invalid JSON", "{", /^invalid JSON \(/],
        ["not an array", '{"jobs": []}', /^not a JSON array$/],
        ["unreadable (a folder)", null, /^EISDIR: /],
      ])(
        "R14: a corrupt file (%s) is reported, never rewritten; durable jobs are refused, session jobs work",
        (_kind, content, reason) => {
          const workdir = tempWorkspace("cron-corrupt");
          const file = path.join(workdir, CRON_FILE);
          if (content === null) mkdirSync(file, { recursive: true });
          else writeFiles(workdir, { [CRON_FILE]: content });
          const t = scheduler({ workdir, at: "2026-03-01T09:00:05" });
          const [line, ...more] = t.s.start();
          expect(more).toEqual([]);
          expect(line!.text.startsWith("[cron] could not load .harness/cron.json: ")).toBe(true);
          const why = line!.text.slice("[cron] could not load .harness/cron.json: ".length);
          expect(why).toMatch(reason);
          expect(
            t.s.schedule({ cron: "0 9 * * *", prompt: "p", recurring: true, durable: true }),
          ).toEqual({
            content: `Error: .harness/cron.json is unreadable (${why}); fix or move it to use durable jobs`,
            isError: true,
          });
          const session = t.add("0 9 * * *");
          t.s.tick();
          expect(t.s.queue.map((job) => job.id)).toEqual([session]);
          expect(t.s.list()).toContain(
            `[!] .harness/cron.json is unreadable (${why}): no durable jobs`,
          );
          if (content !== null) expect(readFileSync(file, "utf8")).toBe(content);
          else expect(readdirSync(file)).toEqual([]);
          // Fixed meanwhile: the next durable job loads the file and saves.
          rmSync(file, { recursive: true });
          writeFiles(workdir, { [CRON_FILE]: fileOf([saved("cron_00000001")]) });
          expect(t.add("0 11 * * *", { durable: true })).toMatch(/^cron_/);
          expect(t.onDisk().map((item) => (item as Job).id)[0]).toBe("cron_00000001");
          expect(t.lines).toContain("  [cron] loaded 1 durable job(s)");
        },
      );

      it("R17: last_fired survives a restart, so a job due this minute does not fire again", () => {
        const workdir = tempWorkspace("cron-restart");
        const first = scheduler({ workdir, at: "2026-03-01T09:00:05" });
        const id = first.add("0 9 * * *", { durable: true });
        first.s.tick();
        first.s.acknowledge(first.s.take());
        const second = scheduler({ workdir, at: "2026-03-01T09:00:30" });
        expect(second.s.start()).toEqual([{ text: "[cron] loaded 1 durable job(s)", tone: "dim" }]);
        second.s.tick();
        expect(second.s.queue).toEqual([]);
        expect(second.s.store.jobs.get(id)!.last_fired).toBe("2026-03-01 09:00");
      });
    });

    // -------------------------------------------------------------------------------------
    describe("delivery", () => {
      function delivery(at = "2026-03-01T09:00:05") {
        const t = scheduler({ at });
        const d = new cron.CronDelivery(t.s, {
          clock: { now: () => t.clock.t },
          say: (line) => t.lines.push(line),
        });
        const pushed: string[] = [];
        const model = (fail: boolean) => async () => {
          if (fail) throw new Error("API error 500 api_error: Internal server error");
          return {} as Anthropic.Message;
        };
        const call = (fail: boolean) =>
          d.seams.aroundModelCall!(model(fail), [], runContext({ turn: "scheduled" }));
        return { ...t, d, pushed, call };
      }

      it("one event for every due job; the scheduled turn takes them all as one message", async () => {
        const t = delivery();
        const a = t.add("0 9 * * *", { prompt: "do the thing", recurring: false });
        const b = t.add("* * * * *", { prompt: "and this" });
        t.d.source.start!((event) => t.pushed.push(event));
        try {
          expect(t.s.queue.map((job) => job.id)).toEqual([a, b]);
          t.d.check();
          t.d.check();
          expect(t.pushed).toEqual(["due"]);
          const input = await t.d.source.turn("due");
          expect(input).toEqual({
            kind: "scheduled",
            request: "[Scheduled] do the thing\n[Scheduled] and this",
            content: [
              { type: "text", text: "[Scheduled] do the thing" },
              { type: "text", text: "[Scheduled] and this" },
            ],
          });
          expect(t.s.queue).toEqual([]);
          expect(t.lines).toContain(`  [cron] delivered ${a}: do the thing`);
          expect(await t.d.source.turn("due")).toBeNull();
          // The first successful response acknowledges; later calls of the turn change nothing.
          await t.call(false);
          expect([...t.s.store.jobs.keys()]).toEqual([b]);
          expect(t.s.store.jobs.get(b)!.pending_delivery).toBe(false);
          await t.call(false);
          expect([...t.s.store.jobs.keys()]).toEqual([b]);
          // A user turn's model calls are not the seam's business.
          t.clock.t = local("2026-03-01T09:01:00");
          t.s.tick();
          await t.d.seams.aroundModelCall!(async () => ({}) as Anthropic.Message, [], runContext());
          expect(t.s.queue).toHaveLength(1);
        } finally {
          t.d.stop();
        }
      });

      it("a failed call puts the jobs back with backoff: 30 s doubling to 15 min, reset on success", async () => {
        const t = delivery();
        const id = t.add("* * * * *", { prompt: "p" });
        t.d.source.start!((event) => t.pushed.push(event));
        try {
          const waits: string[] = [];
          for (let failure = 1; failure <= 7; failure++) {
            await t.d.source.turn("due");
            await expect(t.call(true)).rejects.toThrow("Internal server error");
            expect(t.s.queue.map((job) => job.id)).toEqual([id]);
            waits.push(/next try in (\S+)$/.exec(t.lines.at(-1)!)![1]!);
            const wait = cron.backoffMs(failure);
            t.pushed.length = 0;
            t.clock.t += wait - 1;
            t.d.check();
            expect(t.pushed).toEqual([]);
            expect(await t.d.source.turn("due")).toBeNull();
            t.clock.t += 1;
            t.d.check();
            expect(t.pushed).toEqual(["due"]);
          }
          expect(waits).toEqual(["30s", "1min", "2min", "4min", "8min", "15min", "15min"]);
          expect(t.lines.at(-1)).toBe(
            `  [cron] delivery failed: ${id} back in the queue; next try in 15min`,
          );
          await t.d.source.turn("due");
          await t.call(false);
          expect(t.d.failures).toBe(0);
          expect(t.d.retryAt).toBe(0);
          expect(t.s.store.jobs.get(id)!.pending_delivery).toBe(false);
        } finally {
          t.d.stop();
        }
      });

      it("an outer retry that succeeds after a failure still acknowledges, and the queue is emptied", async () => {
        const t = delivery();
        const id = t.add("0 9 * * *", { recurring: false });
        t.s.tick();
        await t.d.source.turn("due");
        await expect(t.call(true)).rejects.toThrow();
        expect(t.s.queue).toHaveLength(1);
        await t.call(false);
        expect(t.s.queue).toEqual([]);
        expect(t.s.store.jobs.has(id)).toBe(false);
        expect(t.d.failures).toBe(0);
      });

      it("a scheduled turn that ended before any model call is settled by the next turn", async () => {
        const t = delivery();
        const id = t.add("0 9 * * *");
        t.s.tick();
        const input = await t.d.source.turn("due");
        const turnOf = (content: Turn["content"]) =>
          ({
            kind: "user",
            request: "",
            content,
            history: [],
            signal: new AbortController().signal,
          }) as Turn;
        // Its own turn starting is no failure.
        t.d.beforeTurn(turnOf(input!.content));
        expect(t.s.queue).toEqual([]);
        t.d.beforeTurn(turnOf("next line"));
        expect(t.s.queue.map((job) => job.id)).toEqual([id]);
        expect(t.lines.at(-1)).toBe(
          `  [cron] delivery failed: ${id} back in the queue; next try in 30s`,
        );
      });

      it("clock: HARNESS_CLOCK_START starts the clock there and it runs at real speed", () => {
        let real = 1_000_000;
        const clock = cron.clockFrom(
          { HARNESS_CLOCK_START: "2026-03-01T08:59:58.250" },
          () => real,
        );
        expect(clock.now()).toBe(local("2026-03-01T08:59:58.250"));
        real += 1750;
        expect(scheduling.minuteMarker(clock.now())).toBe("2026-03-01 09:00");
        expect(cron.clockFrom({}, () => 42).now()).toBe(42);
        for (const bad of [
          "tomorrow",
          "2026-02-30T10:00",
          "2026-03-01T24:00",
          "2026-03-01T09:00Z",
        ]) {
          expect(() => cron.clockFrom({ HARNESS_CLOCK_START: bad }), bad).toThrow(
            `HARNESS_CLOCK_START must be a local date-time such as 2026-03-02T08:59:58 (got '${bad}')`,
          );
        }
        expect(cron.clockSection(local("2026-03-01T08:59:30"))).toEqual({
          id: "clock",
          text: `Current local time: 2026-03-01 08:59 (Sunday, ${ZONE})`,
          dynamic: true,
        });
      });
    });
  }

  // -------------------------------------------------------------------------------------
  // The contract, on every chapter: the tools and the prompt's Scheduling section and clock
  // line, a job scheduled from the loop running as its own turn, and idle-only delivery.
  describe.concurrent("through the chapter", () => {
    const edge = edgeCase(chapter, CRON);
    it("R9: eighteen tools for the main agent, five for a subagent; the Scheduling section before Memory, the clock line last", async () => {
      const run = await runChapter(chapter, {
        env: { HARNESS_CLOCK_START: "2026-03-01T08:59:30" },
        prompts: ["delegate"],
        steps: delegateOnce(),
      });
      const [main, child] = run.requests as [Request, Request];
      // Later chapters add their tools after these eighteen.
      expect(toolNames(main).slice(0, 18)).toEqual([...S10_TOOLS, ...CRON_TOOLS]);
      expect(toolNames(child)).toEqual(BASE_TOOLS);
      const specs = new Map((main.tools as Anthropic.Tool[]).map((tool) => [tool.name, tool]));
      expect(specs.get("schedule_cron")!.input_schema).toMatchObject({
        required: ["cron", "prompt"],
        properties: {
          cron: { type: "string" },
          prompt: { type: "string" },
          recurring: { type: "boolean" },
          durable: { type: "boolean" },
        },
      });
      expect(specs.get("schedule_cron")!.description).toMatch(
        /^Schedule a prompt with a 5-field cron expression/,
      );
      expect(specs.get("list_crons")!.description).toBe("List scheduled cron jobs.");
      expect(specs.get("list_crons")!.input_schema).toEqual({ type: "object", properties: {} });
      expect(specs.get("cancel_cron")!.input_schema).toMatchObject({ required: ["job_id"] });
      const system = String(main.system);
      expect(system).toContain(`\n\n${SCHEDULING}\n\n`);
      expect(system.indexOf("Background: ")).toBeLessThan(system.indexOf(SCHEDULING));
      expect(system.indexOf(SCHEDULING)).toBeLessThan(system.indexOf("Memory: "));
      expect(system.endsWith(`\n\nCurrent local time: 2026-03-01 08:59 (Sunday, ${ZONE})`)).toBe(
        true,
      );
      expect(String(child.system)).not.toContain("Scheduling:");
      expect(String(child.system)).not.toContain("Current local time:");
      expect(existsSync(path.join(run.workdir, CRON_FILE))).toBe(false);
    });

    edge(
      "R10: runs the tools in the loop: jobs registered and saved, every error sent as is_error",
      async () => {
        const run = await runChapter(chapter, {
          env: { HARNESS_CLOCK_START: "2026-03-01T08:59:30" },
          prompts: ["plan"],
          steps: [
            {
              when: userSaid("plan"),
              reply: reply(
                toolUse("schedule_cron", { cron: "0 9 * * 1-5", prompt: "standup" }),
                toolUse("schedule_cron", {
                  cron: "30 9 * * *",
                  prompt: "coffee",
                  recurring: false,
                  durable: false,
                }),
                toolUse("schedule_cron", { cron: "61 * * * *", prompt: "x" }),
                toolUse("schedule_cron", { cron: "* * * FOO *", prompt: "x" }),
                toolUse("schedule_cron", { cron: "0 9 * * *", prompt: " " }),
                toolUse("schedule_cron", { cron: 5, prompt: "x" }),
                toolUse("cancel_cron", { job_id: "cron_nope" }),
              ),
            },
            {
              when: (r) => lastToolResults(r).length === 7,
              reply: (r) => {
                const id = /cron_[0-9a-f]{8}/.exec(String(lastToolResults(r)[0]!.content))![0];
                return reply(toolUse("list_crons", {}), toolUse("cancel_cron", { job_id: id }));
              },
            },
            { when: (r) => lastToolResults(r).length === 2, reply: reply(text("planned")) },
          ],
        });
        const [, second, third] = run.requests as [Request, Request, Request];
        const first = results(second);
        const [standup, coffee] = first.map((r) => /cron_[0-9a-f]{8}/.exec(String(r[0]))?.[0]);
        expect(first).toEqual([
          [`Scheduled ${standup}: 0 9 * * 1-5 -> standup`, undefined],
          [`Scheduled ${coffee}: 30 9 * * * -> coffee`, undefined],
          ["Error: minute: Value 61 is outside [0-59]", true],
          ["Error: month: Invalid field: FOO", true],
          ["Error: Prompt cannot be empty", true],
          ["Error: Invalid input for schedule_cron: cron must be a string", true],
          ["Job cron_nope not found", true],
        ]);
        expect(results(third)).toEqual([
          [
            `${standup}: 0 9 * * 1-5 -> standup [recurring, durable]\n${coffee}: 30 9 * * * -> coffee [one-shot, session]`,
            undefined,
          ],
          [`Cancelled ${standup}`, undefined],
        ]);
        expect(JSON.parse(readFileSync(path.join(run.workdir, CRON_FILE), "utf8"))).toEqual([]);
        expect(run.output).toContain(`  [cron] scheduled ${standup}: 0 9 * * 1-5 -> standup\n`);
        expect(run.output).toContain(`  [cron] cancelled ${standup}\n`);
        expect(run.output).toContain("planned");
      },
    );

    it("a one-shot job for the next minute runs as its own scheduled turn, acknowledged by its first response", async () => {
      const run = await runHeld(chapter, {
        env: { HARNESS_CLOCK_START: "2026-03-01T08:59:59.000" },
        lines: ["remind me"],
        until: "STRETCHED",
        steps: [
          {
            when: userSaid("remind me"),
            reply: reply(
              toolUse("schedule_cron", {
                cron: "0 9 * * *",
                prompt: "stretch now",
                recurring: false,
              }),
              toolUse("schedule_cron", {
                cron: "0 9 * * *",
                prompt: "drink water",
                recurring: false,
              }),
            ),
          },
          {
            when: (r) => afterTools(r) && !mentionsScheduled(r),
            reply: reply(text("REMINDERS SET")),
          },
          {
            when: isScheduled,
            reply: reply(toolUse("bash", { command: "cat .harness/cron.json" })),
          },
          { when: (r) => afterTools(r) && mentionsScheduled(r), reply: reply(text("STRETCHED")) },
        ],
      });
      expect(run.code).toBe(0);
      const scheduled = run.requests.find(isScheduled)!;
      expect(scheduled.messages.at(-1)).toEqual({
        role: "user",
        content: [
          { type: "text", text: "[Scheduled] stretch now" },
          { type: "text", text: "[Scheduled] drink water" },
        ],
      });
      expect(run.requests.filter(isScheduled)).toHaveLength(1);
      // The prompt is built for the turn: the clock line says 09:00 now.
      expect(String(scheduled.system)).toMatch(/Current local time: 2026-03-01 09:00 \(Sunday, /);
      // The tool ran after the first response: both one-shot jobs were already removed.
      expect(lastToolResults(run.requests.at(-1)!)[0]!.content).toBe("[]");
      expect(readFileSync(path.join(run.workdir, CRON_FILE), "utf8")).toBe("[]\n");
      const out = run.output;
      expect(out.indexOf("[cron] delivered ")).toBeGreaterThan(out.indexOf("REMINDERS SET"));
      expect(out.indexOf("[cron] delivered ")).toBeGreaterThan(out.indexOf("[cron] due "));
      expect(out).toMatch(/ {2}\[cron\] delivered cron_[0-9a-f]{8}: drink water\n/);
      expect(sessionLog(run.workdir).transcript).toContain("INPUT (scheduled)");
    });

    it("R15, idle-only: a due job never joins a running turn, and a user turn never takes it", async () => {
      const run = await runHeld(chapter, {
        env: { HARNESS_CLOCK_START: "2026-03-01T08:59:59.300" },
        files: { [CRON_FILE]: fileOf([saved("cron_0000000a", { prompt: "daily report" })]) },
        lines: ["first", "second"],
        until: "REPORTED",
        steps: [
          {
            when: userSaid("first"),
            reply: reply(toolUse("bash", { command: "sleep 1.5; echo slept" })),
          },
          { when: (r) => afterTools(r) && !mentionsScheduled(r), reply: reply(text("first done")) },
          { when: userSaid("second"), reply: reply(text("second done")) },
          { when: isScheduled, reply: reply(text("REPORTED")) },
        ],
      });
      const kinds = run.requests.map((r) =>
        isScheduled(r) ? "scheduled" : mentionsScheduled(r) ? "joined" : "user",
      );
      expect(kinds).toEqual(["user", "user", "user", "scheduled"]);
      const out = run.output;
      // Due while "first" ran; delivered only after "second", which was typed before it.
      expect(out.indexOf("  [cron] due cron_0000000a: daily report")).toBeLessThan(
        out.indexOf("first done"),
      );
      expect(out.indexOf("  [cron] delivered cron_0000000a")).toBeGreaterThan(
        out.indexOf("second done"),
      );
      expect(JSON.parse(readFileSync(path.join(run.workdir, CRON_FILE), "utf8"))).toEqual([
        saved("cron_0000000a", { prompt: "daily report", last_fired: "2026-03-01 09:00" }),
      ]);
    });

    edge(
      "a 500 re-queues the pending job with backoff, once; downtime is not replayed",
      async () => {
        const model = new ScriptedModel([{ when: userSaid("hello"), reply: reply(text("hi")) }]);
        const server = await startFakeServer({ model });
        for (const fault of everyAttempt(
          chapter,
          apiError(500, "api_error", "Internal server error"),
        ))
          server.failNext(fault);
        const stdin = new PassThrough();
        let typed = false;
        try {
          const run = await runChapter(chapter, {
            server,
            stdin,
            env: { HARNESS_CLOCK_START: "2026-03-01T09:00:30" },
            files: {
              [CRON_FILE]: fileOf([
                saved("cron_0000000a", {
                  cron: "0 3 * * *",
                  prompt: "night job",
                  pending_delivery: true,
                  last_fired: "2026-03-01 03:00",
                }),
                saved("cron_0000000b", {
                  cron: "0 8 * * *",
                  prompt: "missed",
                  last_fired: "2026-02-28 08:00",
                }),
              ]),
            },
            onOutput: (out: Capture) => {
              void out
                .waitFor("next try in 30s")
                .then(() => {
                  typed = true;
                  stdin.write("hello\n");
                  return out.waitFor("hi");
                })
                .then(() => sleep(700))
                .then(() => stdin.end());
            },
          });
          expect(typed).toBe(true);
          const bodies = server.requests.map((r) => modelView(r.body as Request));
          // The scheduled turn's call, tried as often as the chapter tries one call.
          const tries = Array<string>(attemptsPerCall(chapter)).fill("scheduled");
          expect(bodies.map((r) => (isScheduled(r) ? "scheduled" : "user"))).toEqual([
            ...tries,
            "user",
          ]);
          // The failed turn was discarded: the user turn's history holds only its own line.
          expect(bodies.at(-1)!.messages).toEqual([{ role: "user", content: "hello" }]);
          const out = run.output;
          expect(out).toContain("[cron] loaded 2 durable job(s); 1 pending, re-queued");
          expect(out).toMatch(
            /API error 500 api_error: Internal server error \(this turn was discarded/,
          );
          expect(out).toContain(
            "  [cron] delivery failed: cron_0000000a back in the queue; next try in 30s",
          );
          expect(out).not.toContain("cron_0000000b:");
          const onDisk = JSON.parse(readFileSync(path.join(run.workdir, CRON_FILE), "utf8"));
          expect(onDisk[0]).toMatchObject({ id: "cron_0000000a", pending_delivery: true });
          expect(onDisk[1]).toMatchObject({
            pending_delivery: false,
            last_fired: "2026-02-28 08:00",
          });
        } finally {
          await server.close();
        }
      },
    );

    edge(
      "R16: a scheduled turn never asks: an approval-needing call is denied, an allow rule lets one through",
      async () => {
        const stdin = Object.assign(new PassThrough(), { isTTY: true });
        const run = await runChapter(chapter, {
          stdin,
          env: { HARNESS_CLOCK_START: "2026-03-01T09:00:30" },
          files: {
            "notes.txt": "keep me",
            "allowed.txt": "remove me",
            ".claude/settings.json": JSON.stringify({
              permissions: { allow: ["Bash(rm allowed.txt)"] },
            }),
            [CRON_FILE]: fileOf([
              saved("cron_0000000a", { prompt: "clean up", pending_delivery: true }),
            ]),
          },
          onOutput: (out) => {
            void out.waitFor("CLEANED").then(() => stdin.end());
          },
          steps: [
            {
              when: isScheduled,
              reply: reply(
                toolUse("bash", { command: "rm notes.txt" }),
                toolUse("bash", { command: "rm allowed.txt" }),
              ),
            },
            { when: afterTools, reply: reply(text("CLEANED")) },
          ],
        });
        const [denied, allowed] = lastToolResults(run.requests[1]!);
        expect(denied).toMatchObject({
          is_error: true,
          content:
            "Permission denied: approval needed (Potentially destructive command: rm) but a scheduled turn cannot ask the user; an allow rule in .claude/settings.json can permit this call.",
        });
        expect(allowed!.is_error).toBeUndefined();
        expect(existsSync(path.join(run.workdir, "notes.txt"))).toBe(true);
        expect(existsSync(path.join(run.workdir, "allowed.txt"))).toBe(false);
        expect(run.output).not.toContain("Allow? [y/N]");
      },
    );

    edge(
      "R17 through the chapter: a restart in the same minute does not deliver the job again",
      async () => {
        const workdir = tempWorkspace("cron-restart-cli");
        writeFiles(workdir, {
          [CRON_FILE]: fileOf([saved("cron_0000000a", { prompt: "once a day" })]),
        });
        const first = await runHeld(chapter, {
          workdir,
          env: { HARNESS_CLOCK_START: "2026-03-01T09:00:05" },
          lines: [],
          until: "DELIVERED",
          steps: [{ when: isScheduled, reply: reply(text("DELIVERED")) }],
        });
        expect(first.requests.filter(isScheduled)).toHaveLength(1);
        const second = await runHeld(chapter, {
          workdir,
          env: { HARNESS_CLOCK_START: "2026-03-01T09:00:20" },
          lines: [],
          until: "[cron] loaded 1 durable job(s)",
          thenMs: 1300,
        });
        expect(second.requests).toEqual([]);
        expect(second.output).not.toContain("[cron] due");
        expect(JSON.parse(readFileSync(path.join(workdir, CRON_FILE), "utf8"))[0]).toMatchObject({
          last_fired: "2026-03-01 09:00",
          pending_delivery: false,
        });
      },
    );

    edge(
      "R14 through the chapter: a corrupt file is reported and left alone; a session job still runs",
      async () => {
        const corrupt = '{"jobs": []}\n';
        const run = await runHeld(chapter, {
          env: { HARNESS_CLOCK_START: "2026-03-01T09:00:10" },
          files: { [CRON_FILE]: corrupt },
          lines: ["schedule both"],
          until: "SESSION JOB RAN",
          steps: [
            {
              when: userSaid("schedule both"),
              reply: reply(
                toolUse("schedule_cron", { cron: "* * * * *", prompt: "durable one" }),
                toolUse("schedule_cron", {
                  cron: "* * * * *",
                  prompt: "session one",
                  durable: false,
                }),
              ),
            },
            { when: (r) => afterTools(r) && !mentionsScheduled(r), reply: reply(text("ok")) },
            { when: isScheduled, reply: reply(text("SESSION JOB RAN")) },
          ],
        });
        const [durable, session] = results(run.requests[1]!);
        expect(durable).toEqual([
          "Error: .harness/cron.json is unreadable (not a JSON array); fix or move it to use durable jobs",
          true,
        ]);
        expect(String(session![0])).toMatch(
          /^Scheduled cron_[0-9a-f]{8}: \* \* \* \* \* -> session one$/,
        );
        expect(run.output).toContain("[cron] could not load .harness/cron.json: not a JSON array");
        expect(run.requests.find(isScheduled)!.messages.at(-1)!.content).toEqual([
          { type: "text", text: "[Scheduled] session one" },
        ]);
        expect(readFileSync(path.join(run.workdir, CRON_FILE), "utf8")).toBe(corrupt);
      },
    );

    edge("rejects a HARNESS_CLOCK_START that is not a local date-time", async () => {
      const run = await runChapter(chapter, {
        env: { HARNESS_CLOCK_START: "next tuesday" },
        prompts: [],
      });
      expect(run.code).toBe(1);
      expect(run.output).toContain(
        `${chapter.id}: configuration error: HARNESS_CLOCK_START must be a local date-time`,
      );
    });
  });
});
