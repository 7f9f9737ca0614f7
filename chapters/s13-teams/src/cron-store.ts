/**
 * The cron jobs (s12): the store (every job of the session in memory, the durable ones
 * also in `<WORKDIR>/.harness/cron.json`) and the scheduler over it (the three tools' work,
 * the tick that finds due jobs, the queue they wait in, acknowledgement).
 *
 *   .harness/cron.json   a pretty JSON array of durable jobs, upstream's snake_case keys:
 *     [{"id": "cron_1a2b3c4d", "cron": "0 9 * * 1-5", "prompt": "…", "recurring": true,
 *       "durable": true, "pending_delivery": false, "last_fired": "2026-03-02 09:00"}]
 *
 *   change = change the jobs in memory ──> save the whole file (temp file + rename)
 *            a failed save puts every job back as it was, and the caller hears why
 *
 * A file that cannot be read, is not JSON or is not an array is reported, nothing is
 * loaded from it and it is never rewritten: durable jobs are refused until it is fixed or
 * moved, session jobs still work. An item of a valid array that is not a job is reported,
 * skipped, and written back as it was by every later save.
 *
 *   tick (every second) ──> each minute since the last one looked at (60 at most) ──>
 *     each job that matches it and has no undelivered firing: pending_delivery and
 *     last_fired set, saved ──> the queue (`[cron] due …`)
 *   acknowledge: recurring ──> pending_delivery false; one-shot ──> removed
 *   restore:     back to the front of the queue (the model never got the prompt)
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import {
  HARNESS_DIR,
  harnessPath,
  readJsonState,
  type Tone,
  type ToolOutput,
  writeFileAtomic,
} from "shared";
import type { BannerLine } from "./contract.ts";
import { cronError, cronMatches, tidyCron } from "./cron-parse.ts";

/** The file as messages name it, relative to the workspace. */
export const CRON_FILE = `${HARNESS_DIR}/cron.json`;
export const CRON_ID = /^cron_[A-Za-z0-9_-]+$/;
export const MAX_ID_ATTEMPTS = 100;
/** Minutes the tick evaluates at most when it ran late (a busy event loop). */
export const MAX_CATCH_UP_MINUTES = 60;
/** Characters of a prompt in list lines and terminal lines. */
export const PROMPT_PREVIEW = 60;
const MINUTE_MS = 60_000;
/** `last_fired`: the local minute, `YYYY-MM-DD HH:MM`. */
const MINUTE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/;
const KEYS = ["id", "cron", "prompt", "recurring", "durable", "pending_delivery", "last_fired"];

export interface CronJob {
  /** `cron_` + 8 hex characters. */
  id: string;
  /** Five fields, one space apart, as the model wrote them. */
  cron: string;
  prompt: string;
  /** false: a one-shot job, removed once its prompt was delivered. */
  recurring: boolean;
  /** true: kept in .harness/cron.json across restarts; false: this session only. */
  durable: boolean;
  /** Due and not yet acknowledged: a job has at most one undelivered firing. */
  pending_delivery: boolean;
  /** The local minute it last became due, or null. */
  last_fired: string | null;
}

/** A refusal the model can act on; the tools print it as `Error: <message>`. */
export class CronStoreError extends Error {}

/** Why `value` is not a saved job (or a job already loaded), or the job. */
export function savedJob(value: unknown, taken: Set<string>): CronJob | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "not a JSON object";
  }
  const item = value as Record<string, unknown>;
  const unknown = Object.keys(item).find((key) => !KEYS.includes(key));
  if (unknown !== undefined) return `unknown key '${unknown}'`;
  const id = item.id;
  if (typeof id !== "string" || !CRON_ID.test(id)) {
    return `id must be a string starting with cron_ (got ${JSON.stringify(id)})`;
  }
  const where = (problem: string) => `${id}: ${problem}`;
  if (taken.has(id)) return where("duplicate id");
  if (typeof item.cron !== "string") return where("cron must be a string");
  const invalid = cronError(item.cron);
  if (invalid) return where(`cron '${item.cron}': ${invalid}`);
  if (typeof item.prompt !== "string" || !item.prompt.trim()) {
    return where("prompt must be a non-empty string");
  }
  if (typeof item.recurring !== "boolean") return where("recurring must be true or false");
  if (item.durable !== true) return where("durable must be true in the durable file");
  if (item.pending_delivery !== undefined && typeof item.pending_delivery !== "boolean") {
    return where("pending_delivery must be true or false");
  }
  const fired = item.last_fired ?? null;
  if (fired !== null && (typeof fired !== "string" || !MINUTE.test(fired))) {
    return where("last_fired must be null or 'YYYY-MM-DD HH:MM'");
  }
  return {
    id,
    cron: tidyCron(item.cron),
    prompt: item.prompt,
    recurring: item.recurring,
    durable: true,
    pending_delivery: item.pending_delivery === true,
    last_fired: fired,
  };
}

export interface LoadReport {
  /** The jobs this load added, in file order. */
  loaded: CronJob[];
  /** One line per item that is not a job: `<why>`. */
  skipped: string[];
}

export interface CronStoreOptions {
  /** The 8 hex characters of a new ID (tests force collisions with it). */
  newId?: () => string;
}

/** An entry of the durable file: a loaded job (by ID) or an item kept as it was. */
type Entry = { id: string } | { raw: unknown };

export class CronStore {
  readonly workdir: string;
  /** Every job of the session, in the order it was added. */
  readonly jobs = new Map<string, CronJob>();
  /** Why .harness/cron.json could not be loaded; null when it could (or does not exist). */
  corrupt: string | null = null;
  /** The durable file's order: jobs by ID, invalid items verbatim. */
  private entries: Entry[] = [];
  private readonly newId: () => string;

  constructor(workdir: string, options: CronStoreOptions = {}) {
    this.workdir = workdir;
    this.newId = options.newId ?? (() => randomBytes(4).toString("hex"));
  }

  get file(): string {
    return path.join(this.workdir, CRON_FILE);
  }

  /**
   * Reads the durable file and adds its jobs: at start, and again while it is corrupt (so a
   * fixed file works without a restart). A missing file is no jobs; an unreadable one sets
   * `corrupt` and adds nothing (the file is left as it is).
   */
  load(): LoadReport {
    const report: LoadReport = { loaded: [], skipped: [] };
    const read = readJsonState<unknown[]>(this.file, (value) =>
      Array.isArray(value) ? null : "not a JSON array",
    );
    if (read.status !== "ok") {
      // readJsonState starts its reason with the path; the [cron] line names the file itself.
      this.corrupt = read.status === "corrupt" ? read.error.slice(this.file.length + 2) : null;
      return report;
    }
    this.corrupt = null;
    const taken = new Set(this.jobs.keys());
    const entries: Entry[] = [];
    for (const item of read.value) {
      const job = savedJob(item, taken);
      if (typeof job === "string") {
        report.skipped.push(job);
        entries.push({ raw: item });
        continue;
      }
      taken.add(job.id);
      this.jobs.set(job.id, job);
      entries.push({ id: job.id });
      report.loaded.push(job);
    }
    // Loaded at start, or again while the file was corrupt: no durable entries exist yet.
    this.entries = entries;
    return report;
  }

  /** A fresh ID, drawn again while it is taken. */
  allocateId(): string {
    const taken = new Set([...this.jobs.keys(), ...this.rawIds()]);
    for (let i = 0; i < MAX_ID_ATTEMPTS; i++) {
      const id = `cron_${this.newId()}`;
      if (!taken.has(id)) return id;
    }
    throw new CronStoreError("Could not allocate a cron job ID");
  }

  /** Adds a job (saved first when durable). */
  add(job: CronJob): void {
    this.change(job.durable, () => {
      this.jobs.set(job.id, job);
      if (job.durable) this.entries.push({ id: job.id });
    });
  }

  /** Removes a job (saved when durable); false when there is no such job. */
  remove(id: string): boolean {
    const job = this.jobs.get(id);
    if (!job) return false;
    this.change(job.durable, () => this.delete(id));
    return true;
  }

  /** Inside `change`: drops a job from memory and from the file's order. */
  delete(id: string): void {
    this.jobs.delete(id);
    this.entries = this.entries.filter((entry) => !("id" in entry) || entry.id !== id);
  }

  /**
   * Runs `work`, which changes jobs in memory, then saves when `durable`. If the save fails,
   * every job (the same objects, so a queue holding them stays right) is put back as it
   * was, and the error is thrown.
   */
  change<T>(durable: boolean, work: () => T): T {
    if (durable) this.checkWritable();
    const before = [...this.jobs.values()].map((job) => ({ job, copy: { ...job } }));
    const entries = [...this.entries];
    const result = work();
    if (!durable) return result;
    try {
      this.save();
    } catch (error) {
      this.jobs.clear();
      for (const { job, copy } of before) this.jobs.set(job.id, Object.assign(job, copy));
      this.entries = entries;
      throw error;
    }
    return result;
  }

  /** Refuses a durable change while the file could not be loaded. */
  checkWritable(): void {
    if (this.corrupt !== null) {
      throw new CronStoreError(
        `${CRON_FILE} is unreadable (${this.corrupt}); fix or move it to use durable jobs`,
      );
    }
  }

  /** The whole durable file, written atomically. */
  private save(): void {
    const items = this.entries.flatMap((entry) => {
      if ("raw" in entry) return [entry.raw];
      const job = this.jobs.get(entry.id);
      if (!job?.durable) return [];
      return [Object.fromEntries(KEYS.map((key) => [key, job[key as keyof CronJob]]))];
    });
    try {
      writeFileAtomic(
        harnessPath(this.workdir, "cron.json"),
        `${JSON.stringify(items, null, 2)}\n`,
      );
    } catch (error) {
      throw new CronStoreError(`could not save ${CRON_FILE}: ${(error as Error).message}`);
    }
  }

  private rawIds(): string[] {
    return this.entries.flatMap((entry) => {
      if (!("raw" in entry)) return [];
      const id = (entry.raw as { id?: unknown } | null)?.id;
      return typeof id === "string" ? [id] : [];
    });
  }
}

// ---------------------------------------------------------------------------------------
// Time, as the scheduler reads it.

const pad = (n: number) => String(n).padStart(2, "0");

/** The local minute of `ms`: `YYYY-MM-DD HH:MM` (what `last_fired` holds). */
export function minuteMarker(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The start of the local minute `ms` falls in. */
function minuteStart(ms: number): number {
  const d = new Date(ms);
  d.setSeconds(0, 0);
  return d.getTime();
}

export function preview(prompt: string): string {
  return prompt.replace(/\s+/g, " ").trim().slice(0, PROMPT_PREVIEW);
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------
// The scheduler: the jobs, the queue of due ones, the tick.

export interface ScheduleInput {
  cron: string;
  prompt: string;
  recurring: boolean;
  durable: boolean;
}

export interface SchedulerOptions {
  workdir: string;
  /** The clock's time (milliseconds since the epoch). */
  now: () => number;
  /** Prints one terminal line. */
  say?: (text: string, tone: Tone) => void;
  /** The 8 hex characters of a new ID. */
  newId?: () => string;
}

export class CronScheduler {
  readonly store: CronStore;
  /** Jobs due and not yet taken by a scheduled turn (the registry's own objects). */
  readonly queue: CronJob[] = [];
  private readonly now: () => number;
  private readonly say: (text: string, tone: Tone) => void;
  /** The start of the last minute the tick evaluated; null before the first tick. */
  private lastEvaluated: number | null = null;

  constructor(options: SchedulerOptions) {
    this.store = new CronStore(options.workdir, { newId: options.newId });
    this.now = options.now;
    this.say = options.say ?? (() => {});
  }

  /** Loads the durable jobs and queues the ones still pending; returns the banner lines. */
  start(): BannerLine[] {
    return this.loaded(this.store.load());
  }

  private loaded(report: LoadReport): BannerLine[] {
    const lines: BannerLine[] = [];
    if (this.store.corrupt !== null) {
      lines.push({
        text: `[cron] could not load ${CRON_FILE}: ${this.store.corrupt}`,
        tone: "warn",
      });
    }
    for (const why of report.skipped) {
      lines.push({ text: `[cron] skipped invalid saved job: ${why}`, tone: "warn" });
    }
    const pending = report.loaded.filter((job) => job.pending_delivery);
    this.queue.push(...pending);
    if (report.loaded.length > 0) {
      const requeued = pending.length > 0 ? `; ${pending.length} pending, re-queued` : "";
      lines.push({
        text: `[cron] loaded ${report.loaded.length} durable job(s)${requeued}`,
        tone: "dim",
      });
    }
    return lines;
  }

  /** schedule_cron: checked, registered, saved when durable. */
  schedule(input: ScheduleInput): ToolOutput {
    const invalid = cronError(input.cron);
    if (invalid) return { content: `Error: ${invalid}`, isError: true };
    if (!input.prompt.trim()) return { content: "Error: Prompt cannot be empty", isError: true };
    if (input.durable && this.store.corrupt !== null) {
      // Fixed or moved meanwhile? Then its jobs load now and this one can be saved.
      for (const line of this.loaded(this.store.load())) this.say(`  ${line.text}`, line.tone!);
    }
    try {
      const job: CronJob = {
        id: this.store.allocateId(),
        cron: tidyCron(input.cron),
        prompt: input.prompt,
        recurring: input.recurring,
        durable: input.durable,
        pending_delivery: false,
        last_fired: null,
      };
      this.store.add(job);
      this.say(`  [cron] scheduled ${job.id}: ${job.cron} -> ${preview(job.prompt)}`, "accent");
      return { content: `Scheduled ${job.id}: ${job.cron} -> ${job.prompt}` };
    } catch (error) {
      if (!(error instanceof CronStoreError)) throw error;
      return { content: `Error: ${error.message}`, isError: true };
    }
  }

  /** list_crons: one line per job, in the order they were added. */
  list(): string {
    const lines = [...this.store.jobs.values()].map(
      (job) =>
        `${job.id}: ${job.cron} -> ${preview(job.prompt)} ` +
        `[${job.recurring ? "recurring" : "one-shot"}, ${job.durable ? "durable" : "session"}]`,
    );
    if (lines.length === 0) lines.push("No cron jobs.");
    if (this.store.corrupt !== null) {
      lines.push(`[!] ${CRON_FILE} is unreadable (${this.store.corrupt}): no durable jobs`);
    }
    return lines.join("\n");
  }

  /** cancel_cron: gone from the registry and the queue (saved first when durable). */
  cancel(id: string): ToolOutput {
    const job = this.store.jobs.get(id);
    if (!job) return { content: `Job ${id} not found`, isError: true };
    try {
      this.store.remove(id);
    } catch (error) {
      if (!(error instanceof CronStoreError)) throw error;
      return { content: `Error: ${error.message}`, isError: true };
    }
    this.unqueue([job]);
    this.say(`  [cron] cancelled ${id}`, "warn");
    return { content: `Cancelled ${id}` };
  }

  /**
   * Evaluates every minute since the last one evaluated, up to the current one (which is
   * looked at again on every tick: a job added in this minute may match it). At most
   * MAX_CATCH_UP_MINUTES; the first tick looks at the current minute only.
   */
  tick(now = this.now()): void {
    const current = minuteStart(now);
    const last = this.lastEvaluated;
    let from = last === null || last >= current ? current : last + MINUTE_MS;
    from = Math.max(from, current - (MAX_CATCH_UP_MINUTES - 1) * MINUTE_MS);
    for (let minute = from; minute <= current; minute += MINUTE_MS) this.evaluate(minute);
    this.lastEvaluated = current;
  }

  /** Queues each job that matches `minute` and has no undelivered firing. */
  private evaluate(minute: number): void {
    const marker = minuteMarker(minute);
    const date = new Date(minute);
    for (const job of [...this.store.jobs.values()]) {
      if (job.pending_delivery || job.last_fired === marker) continue;
      if (!cronMatches(job.cron, date)) continue;
      try {
        this.store.change(job.durable, () => {
          job.pending_delivery = true;
          job.last_fired = marker;
        });
      } catch (error) {
        this.say(`  [cron] could not enqueue ${job.id}: ${message(error)}`, "error");
        continue;
      }
      this.queue.push(job);
      this.say(`  [cron] due ${job.id}: ${preview(job.prompt)}`, "accent");
    }
  }

  /** Every queued job, for one scheduled turn; the queue is empty afterwards. */
  take(): CronJob[] {
    return this.queue.splice(0);
  }

  /**
   * The model has the prompts: a recurring job's flag is cleared, a one-shot job removed;
   * a job cancelled meanwhile is left alone. A failed save puts everything back, queues
   * the jobs again and returns false.
   */
  acknowledge(jobs: CronJob[]): boolean {
    const live = jobs.filter((job) => this.store.jobs.get(job.id) === job);
    if (live.length === 0) return true;
    try {
      this.store.change(
        live.some((job) => job.durable),
        () => {
          for (const job of live) {
            if (job.recurring) job.pending_delivery = false;
            else this.store.delete(job.id);
          }
        },
      );
      return true;
    } catch (error) {
      this.say(`  [cron] acknowledgement failed: ${message(error)}`, "error");
      this.restore(live);
      return false;
    }
  }

  /** The model never got the prompts: the jobs still registered go back to the queue's front. */
  restore(jobs: CronJob[]): void {
    const live = jobs.filter(
      (job) => this.store.jobs.get(job.id) === job && !this.queue.includes(job),
    );
    for (const job of live) job.pending_delivery = true;
    this.queue.unshift(...live);
  }

  /** Takes jobs out of the queue (cancelled, or delivered after all). */
  unqueue(jobs: CronJob[]): void {
    for (const job of jobs) {
      const at = this.queue.indexOf(job);
      if (at !== -1) this.queue.splice(at, 1);
    }
  }
}
