/**
 * Cron (s12): prompts that run at a local time, as turns of their own, only while the
 * agent is idle.
 *
 *   schedule_cron {cron, prompt, recurring, durable} ──> cron_1a2b3c4d (cron-scheduler.ts;
 *        the jobs and their file: cron-store.ts)
 *   every 1 s, the tick (cron-scheduler.ts): each minute since the last one it looked at,
 *        each job that matches it (cron-parse.ts) ──> pending_delivery, saved ──> the queue
 *   every 0.2 s: jobs queued and no backoff ──> one "cron" event into the REPL's queue,
 *        behind the lines typed before it; the REPL takes it only between turns
 *   the event reaches the front ──> one scheduled turn: every queued job as one user
 *        message, one `[Scheduled] <prompt>` text block per job
 *   its first successful model response (aroundModelCall) ──> acknowledged: a recurring
 *        job's flag cleared, a one-shot job removed
 *   an API error instead ──> the turn is discarded (repl.ts), the jobs go back to the
 *        queue, the next try waits 30 s, doubling per failure up to 15 min
 *
 * Delivery is at-least-once: a job is marked and saved before it is queued, and cleared
 * only once the model has its prompt, so a job due while the harness was busy, or pending
 * when it stopped, is delivered later (downtime itself is not replayed). A scheduled turn
 * is a normal turn, except that nobody is at the prompt: permissions.ts denies what would
 * need an approval. A scheduled turn that fails before its first model call (a compaction
 * summary that fails) has its jobs put back when the next turn or cron event comes.
 *
 * All time comes from one clock; `HARNESS_CLOCK_START` starts it at a given local time
 * and lets it run at real speed (tests, the demo).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { ConfigError, defineTool, type Env, readVar, type Tone, type ToolDefinition } from "shared";
import type { EventSource, LoopSeams, Mechanism, Turn, TurnInput } from "./contract.ts";
import { CronScheduler, message, minuteMarker, preview } from "./cron-scheduler.ts";
import type { CronJob } from "./cron-store.ts";
import type { Harness } from "./harness.ts";
import type { PromptSection } from "./prompt.ts";

/** How often the tick looks at the clock. */
export const TICK_MS = 1_000;
/** How often the queue is checked for jobs to deliver. */
export const QUEUE_CHECK_MS = 200;
/** The wait after a failed delivery, doubling per consecutive failure up to the maximum. */
export const BACKOFF_FIRST_MS = 30_000;
export const BACKOFF_MAX_MS = 15 * 60_000;
const MINUTE_MS = 60_000;
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

// ---------------------------------------------------------------------------------------
// The clock.

export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
}

const LOCAL_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/;

/**
 * The real clock, or with `HARNESS_CLOCK_START` (an ISO local date-time such as
 * 2026-03-02T08:59:58) one that starts there and runs at real speed.
 */
export function clockFrom(env: Env, realNow: () => number = Date.now): Clock {
  const raw = readVar(env, "HARNESS_CLOCK_START");
  if (raw === undefined) return { now: realNow };
  const match = LOCAL_TIME.exec(raw);
  const parts = match?.slice(1, 7).map((part) => Number(part ?? 0));
  const [year, month, day, hour, minute, second] = parts ?? [];
  const ms = Math.round(Number(`0.${match?.[7] ?? 0}`) * 1000);
  const start =
    parts === undefined ? null : new Date(year!, month! - 1, day, hour, minute, second, ms);
  const valid =
    start !== null &&
    start.getFullYear() === year &&
    start.getMonth() === month! - 1 &&
    start.getDate() === day &&
    hour! < 24 &&
    minute! < 60 &&
    second! < 60;
  if (!valid) {
    throw new ConfigError(
      `HARNESS_CLOCK_START must be a local date-time such as 2026-03-02T08:59:58 (got '${raw}')`,
    );
  }
  const offset = start.getTime() - realNow();
  return { now: () => realNow() + offset };
}

// ---------------------------------------------------------------------------------------
// Delivery: the REPL event, the scheduled turn, acknowledgement and backoff.

/** The wait before the next try after `failures` consecutive failed deliveries. */
export function backoffMs(failures: number): number {
  return Math.min(BACKOFF_FIRST_MS * 2 ** Math.max(0, failures - 1), BACKOFF_MAX_MS);
}

function duration(ms: number): string {
  return ms < MINUTE_MS ? `${Math.round(ms / 1000)}s` : `${Math.round(ms / MINUTE_MS)}min`;
}

interface Delivery {
  jobs: CronJob[];
  /** The scheduled turn's message content (its identity tells the turn apart). */
  content: Anthropic.TextBlockParam[];
  /** sent: waiting for the first model response; failed: back in the queue. */
  state: "sent" | "acked" | "failed";
}

export interface DeliveryOptions {
  clock: Clock;
  say?: (text: string, tone: Tone) => void;
}

export class CronDelivery {
  /** Consecutive failed deliveries, and when the next may start (clock time). */
  failures = 0;
  retryAt = 0;
  /** The latest scheduled turn's jobs. */
  current: Delivery | null = null;
  readonly source: EventSource;
  readonly seams: LoopSeams;
  private readonly scheduler: CronScheduler;
  private readonly clock: Clock;
  private readonly say: (text: string, tone: Tone) => void;
  private push: ((text: string) => void) | null = null;
  /** A cron event waits in the REPL's queue. */
  private eventQueued = false;
  private timers: NodeJS.Timeout[] = [];

  constructor(scheduler: CronScheduler, options: DeliveryOptions) {
    this.scheduler = scheduler;
    this.clock = options.clock;
    this.say = options.say ?? (() => {});
    this.source = {
      kind: "cron",
      start: (push) => this.begin(push),
      turn: () => this.turn(),
    };
    this.seams = {
      aroundModelCall: async (next, _messages, run) => {
        const delivery = this.current;
        if (run.turn !== "scheduled" || !delivery || delivery.state === "acked") return next();
        try {
          const response = await next();
          this.acknowledge(delivery);
          return response;
        } catch (error) {
          if (delivery.state === "sent") this.fail(delivery);
          throw error;
        }
      },
    };
  }

  /** The REPL started: the first tick now, then the two timers (neither keeps Node alive). */
  begin(push: (text: string) => void): void {
    this.push = push;
    const guarded = (work: () => void) => () => {
      try {
        work();
      } catch (error) {
        this.say(`  [cron] ${message(error)}`, "error");
      }
    };
    guarded(() => this.scheduler.tick())();
    this.timers = [
      setInterval(
        guarded(() => this.scheduler.tick()),
        TICK_MS,
      ),
      setInterval(
        guarded(() => this.check()),
        QUEUE_CHECK_MS,
      ),
    ];
    for (const timer of this.timers) timer.unref();
  }

  /** The queue check: one event into the REPL's queue when jobs wait and no backoff runs. */
  check(): void {
    if (!this.push || this.eventQueued || this.scheduler.queue.length === 0) return;
    if (this.clock.now() < this.retryAt) return;
    this.eventQueued = true;
    this.push("due");
  }

  /** The event reached the front of the REPL's queue: the agent is idle. */
  async turn(): Promise<TurnInput | null> {
    this.eventQueued = false;
    this.settle();
    if (this.scheduler.queue.length === 0 || this.clock.now() < this.retryAt) return null;
    const jobs = this.scheduler.take();
    const content = jobs.map(
      (job): Anthropic.TextBlockParam => ({ type: "text", text: `[Scheduled] ${job.prompt}` }),
    );
    this.current = { jobs, content, state: "sent" };
    for (const job of jobs) {
      this.say(`  [cron] delivered ${job.id}: ${preview(job.prompt)}`, "accent");
    }
    return {
      kind: "scheduled",
      request: content.map((block) => block.text).join("\n"),
      content,
    };
  }

  /** Before every turn: a scheduled turn that ended without a model response failed. */
  beforeTurn(turn: Turn): void {
    if (turn.content !== this.current?.content) this.settle();
  }

  private settle(): void {
    if (this.current?.state === "sent") this.fail(this.current);
  }

  private acknowledge(delivery: Delivery): void {
    // Put back by a failed call that an outer layer (compaction) then retried successfully.
    if (delivery.state === "failed") this.scheduler.unqueue(delivery.jobs);
    delivery.state = "acked";
    if (this.scheduler.acknowledge(delivery.jobs)) {
      this.failures = 0;
      this.retryAt = 0;
    } else this.backOff();
  }

  private fail(delivery: Delivery): void {
    delivery.state = "failed";
    this.scheduler.restore(delivery.jobs);
    const wait = this.backOff();
    const ids = delivery.jobs.map((job) => job.id).join(", ");
    this.say(
      `  [cron] delivery failed: ${ids} back in the queue; next try in ${duration(wait)}`,
      "warn",
    );
  }

  private backOff(): number {
    this.failures++;
    const wait = backoffMs(this.failures);
    this.retryAt = this.clock.now() + wait;
    return wait;
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    this.push = null;
  }
}

// ---------------------------------------------------------------------------------------
// Tools, prompt sections, the mechanism.

/** The three cron tools, in the order the model sees them. */
export function cronTools(scheduler: CronScheduler): ToolDefinition[] {
  const scheduleCron = defineTool({
    name: "schedule_cron",
    aliases: [],
    description:
      "Schedule a prompt with a 5-field cron expression: min hour dom month dow (local time).",
    input_schema: {
      type: "object",
      properties: {
        cron: { type: "string", description: "minute hour day-of-month month day-of-week" },
        prompt: { type: "string", description: "What to run when it is due." },
        recurring: {
          type: "boolean",
          default: true,
          description: "false: run once, then remove (default true)",
        },
        durable: {
          type: "boolean",
          default: true,
          description: "false: this session only (default true)",
        },
      },
      required: ["cron", "prompt"],
    },
    run: async (input) => scheduler.schedule(input),
  });

  const listCrons = defineTool({
    name: "list_crons",
    aliases: [],
    description: "List scheduled cron jobs.",
    input_schema: { type: "object", properties: {} },
    run: async () => ({ content: scheduler.list() }),
  });

  const cancelCron = defineTool({
    name: "cancel_cron",
    aliases: [],
    description: "Cancel a cron job by ID.",
    input_schema: {
      type: "object",
      properties: { job_id: { type: "string" } },
      required: ["job_id"],
    },
    run: async ({ job_id }) => scheduler.cancel(job_id),
  });

  return [scheduleCron, listCrons, cancelCron] as ToolDefinition[];
}

/** This mechanism's stable part of the main agent's system prompt. */
export function schedulingSection(): PromptSection {
  return {
    id: "scheduling",
    text:
      "Scheduling: schedule_cron runs a prompt at a future local time. Fields: minute hour " +
      "day-of-month month day-of-week. For a one-off reminder compute the exact minute and " +
      "set recurring to false. Durable jobs survive restarts. A scheduled prompt runs later " +
      "as its own turn and cannot ask the user for approval.",
  };
}

/** The machine's time zone, looked up once (an Intl formatter is costly to make). */
let timeZone: string | null = null;

/** The per-turn clock line (dynamic: after every stable section, after Memory). */
export function clockSection(now: number): PromptSection {
  timeZone ??= Intl.DateTimeFormat().resolvedOptions().timeZone;
  const zone = timeZone;
  const weekday = WEEKDAYS[new Date(now).getDay()];
  return {
    id: "clock",
    text: `Current local time: ${minuteMarker(now)} (${weekday}, ${zone})`,
    dynamic: true,
  };
}

/**
 * Cron as a mechanism: the three tools and the Scheduling section for the main agent
 * (subagents get neither), the clock line in its prompt, the durable jobs loaded at start,
 * the "cron" event source, acknowledgement around the scheduled turn's model calls, and
 * the timers stopped when the session ends.
 */
export function cronMechanism(harness: Pick<Harness, "env" | "workdir" | "emit">): Mechanism {
  const clock = clockFrom(harness.env);
  const say = (text: string, tone: Tone) =>
    harness.emit({ type: "notice", scope: "main", text, tone });
  const scheduler = new CronScheduler({ workdir: harness.workdir, now: clock.now, say });
  const delivery = new CronDelivery(scheduler, { clock, say });
  const tools = cronTools(scheduler);
  return {
    name: "cron",
    tools: (role) => (role === "main" ? tools : []),
    sections: (role) => (role === "main" ? [schedulingSection(), clockSection(clock.now())] : []),
    loop: (run) => (run.role === "main" ? delivery.seams : null),
    start: () => scheduler.start(),
    turn: { beforeTurn: async (turn) => delivery.beforeTurn(turn) },
    sources: [delivery.source],
    close: () => delivery.stop(),
  };
}
