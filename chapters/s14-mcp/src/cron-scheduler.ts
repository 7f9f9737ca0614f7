/**
 * The cron scheduler (s12), over the store (cron-store.ts): the three tools' work, the tick
 * that finds due jobs, the queue they wait in, acknowledgement.
 *
 *   tick (every second) ──> each minute since the last one looked at (60 at most) ──>
 *     each job that matches it and has no undelivered firing: pending_delivery and
 *     last_fired set, saved ──> the queue (`[cron] due …`)
 *   acknowledge: recurring ──> pending_delivery false; one-shot ──> removed
 *   restore:     back to the front of the queue (the model never got the prompt)
 */
import type { Tone, ToolOutput } from "shared";
import type { BannerLine } from "./contract.ts";
import { cronError, cronMatches, tidyCron } from "./cron-parse.ts";
import {
  CRON_FILE,
  type CronJob,
  CronStore,
  CronStoreError,
  type LoadReport,
} from "./cron-store.ts";

/** Minutes the tick evaluates at most when it ran late (a busy event loop). */
export const MAX_CATCH_UP_MINUTES = 60;
/** Characters of a prompt in list lines and terminal lines. */
export const PROMPT_PREVIEW = 60;
const MINUTE_MS = 60_000;

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
