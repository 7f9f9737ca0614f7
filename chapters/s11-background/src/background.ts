/**
 * Background jobs (s11): a long command runs on its own while the agent keeps working,
 * and its result comes back later as a notification.
 *
 *   bash {command, run_in_background: true}
 *     permissions, PreToolUse hooks            (as for every call: a denial starts nothing)
 *     start: bg_0001 registered, its command spawned ──> placeholder result at once
 *   … the agent goes on; the job ends (completed or failed) and joins the ready queue …
 *   before every model call (beforeModelCall seam):
 *     ready jobs ──> <task_notification> blocks ──> the last user message, after its
 *     tool results (and after a todo reminder, which is already there)
 *
 * The flag is added to s01's `bash` through `extendTool`, so bash.ts is not edited; jobs run
 * through the same `runCommand` as foreground calls, with a 600 s timeout. Nothing wakes an
 * idle agent: a job that ends between turns rides in the next turn's message. When the
 * session ends, every running job's process group is ended (SIGTERM, then SIGKILL).
 */
import type { ChildProcess } from "node:child_process";
import type Anthropic from "@anthropic-ai/sdk";
import {
  endGroups,
  type FromSchema,
  positiveIntVar,
  type ToolDefinition,
  type ToolOutput,
} from "shared";
import { formatRun, runCommand } from "./bash.ts";
import { type LoopSeams, type Mechanism, type Role, tagOrigin } from "./contract.ts";
import type { Harness } from "./harness.ts";

type MessageParam = Anthropic.MessageParam;

/** How long a background job may run; `BACKGROUND_TIMEOUT_MS` overrides it. */
export const BACKGROUND_TIMEOUT_MS = 600_000;
/** Jobs that may run at once; one more is refused. */
export const MAX_RUNNING_JOBS = 8;
/** Characters of a job's result in its notification. */
export const SUMMARY_CHARS = 500;
/** Characters of the command in the terminal lines and in /bg. */
const COMMAND_PREVIEW = 60;

export type JobStatus = "running" | "completed" | "failed";

export interface Job {
  id: string;
  command: string;
  status: JobStatus;
  startedAt: number;
  endedAt?: number;
  /** The whole formatted result (at most 50 000 characters, as for foreground bash). */
  result?: string;
  /** Its notification has been sent to the model. */
  delivered: boolean;
}

/** `&`, `<` and `>` escaped, so a command or an output cannot close a tag early. */
export function escapeXml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** The text the model reads when a job has ended. */
export function notificationText(job: Job): string {
  return [
    "<task_notification>",
    `  <task_id>${job.id}</task_id>`,
    `  <status>${job.status}</status>`,
    `  <command>${escapeXml(job.command)}</command>`,
    `  <summary>${escapeXml((job.result ?? "").slice(0, SUMMARY_CHARS))}</summary>`,
    "</task_notification>",
  ].join("\n");
}

export const placeholder = (id: string) =>
  `[Background task ${id} started] The result will be collected on a later turn.`;

export interface JobsOptions {
  workdir: string;
  timeoutMs: number;
  /** Told when a job starts and when one is collected (the terminal lines). */
  say?: (text: string) => void;
  /** Records a job's start in the session transcript. */
  log?: (title: string, text: string) => void;
}

/** The jobs of this process: IDs, statuses, and the queue of ended ones not yet delivered. */
export class BackgroundJobs {
  readonly jobs = new Map<string, Job>();
  private readonly ready: string[] = [];
  private readonly running = new Set<Promise<void>>();
  /** The jobs' shells: the session's end stops these and no other process. */
  private readonly children = new Set<ChildProcess>();
  private count = 0;
  private readonly options: JobsOptions;

  constructor(options: JobsOptions) {
    this.options = options;
  }

  get runningCount(): number {
    return [...this.jobs.values()].filter((job) => job.status === "running").length;
  }

  /** Registers and spawns a job; the returned text is the call's result (is_error if refused). */
  start(command: string): ToolOutput {
    if (command.trim() === "")
      return { content: "Error: Bash command cannot be empty", isError: true };
    if (this.runningCount >= MAX_RUNNING_JOBS) {
      return {
        content: `Error: ${MAX_RUNNING_JOBS} background jobs are already running; wait for one to finish or run this in the foreground`,
        isError: true,
      };
    }
    this.count++;
    const id = `bg_${String(this.count).padStart(4, "0")}`;
    const job: Job = { id, command, status: "running", startedAt: Date.now(), delivered: false };
    this.jobs.set(id, job);
    this.options.say?.(`  [background] started ${id}: ${preview(command)}`);
    this.options.log?.("BACKGROUND TASK STARTED", `${id}: ${command}`);
    const { timeoutMs } = this.options;
    const onSpawn = (child: ChildProcess) => {
      this.children.add(child);
      child.once("exit", () => this.children.delete(child));
    };
    const work = runCommand(command, { cwd: this.options.workdir, timeoutMs, onSpawn })
      .then((run) => formatRun(run, timeoutMs))
      .catch((error: unknown) => ({
        content: `Error: ${error instanceof Error ? error.message : String(error)}`,
        isError: true,
      }))
      .then((output) => {
        job.status = output.isError ? "failed" : "completed";
        job.result = output.content;
        job.endedAt = Date.now();
        this.ready.push(id);
      });
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
    return { content: placeholder(id) };
  }

  /** The ended jobs not yet delivered, in the order they ended; each is delivered once. */
  collect(): Job[] {
    const ended = this.ready.splice(0).map((id) => this.jobs.get(id)!);
    for (const job of ended) {
      job.delivered = true;
      this.options.say?.(`  [background] collected ${job.id}: ${job.status}`);
    }
    return ended;
  }

  /** Resolves when every job started so far has ended (tests, and the end of a session). */
  async settled(): Promise<void> {
    await Promise.all([...this.running]);
  }

  /** Ends every running job's process group (SIGTERM, a short grace, SIGKILL); only theirs. */
  async stop(): Promise<void> {
    if (this.runningCount === 0) return;
    await endGroups([...this.children]);
    await this.settled();
  }
}

/**
 * Adds ended jobs to the request: their notifications join the last user message after
 * what it holds (tool results, a reminder, the typed text), or form a new user message
 * when the history does not end with one. Returns how many were added.
 */
export function injectNotifications(messages: MessageParam[], jobs: Job[]): number {
  if (jobs.length === 0) return 0;
  const blocks: Anthropic.TextBlockParam[] = jobs.map((job) => ({
    type: "text",
    text: notificationText(job),
  }));
  const last = messages.at(-1);
  if (last?.role === "user") {
    last.content =
      typeof last.content === "string"
        ? [{ type: "text", text: last.content }, ...blocks]
        : [...last.content, ...blocks];
  } else {
    messages.push(tagOrigin({ role: "user", content: blocks }, "notification"));
  }
  return jobs.length;
}

/** The property the flag adds to bash's schema. */
const FLAG = {
  type: "boolean",
  description: "true: run as a background job; its result arrives later.",
} as const;

export type BackgroundInput = { command: string; run_in_background?: FromSchema<typeof FLAG> };

/**
 * `bash` with the flag: the same tool, one more property in its schema, so the loop's check
 * accepts only a boolean there. `true` runs in the background; absent or false runs in the
 * foreground as before.
 */
export function withBackgroundFlag(
  bash: ToolDefinition,
  jobs: Pick<BackgroundJobs, "start">,
): ToolDefinition<BackgroundInput> {
  const schema = bash.input_schema;
  return {
    ...(bash as ToolDefinition<unknown>),
    description:
      `${bash.description} With run_in_background: true it starts the command as a job and ` +
      "returns its ID at once; the result arrives later as a <task_notification>.",
    input_schema: { ...schema, properties: { ...schema.properties, run_in_background: FLAG } },
    run(input, context) {
      if (input.run_in_background) return Promise.resolve(jobs.start(input.command));
      return bash.run(input, context);
    },
  };
}

/** This mechanism's part of the system prompt. */
export function backgroundSection() {
  return {
    id: "background",
    text:
      "Background: set run_in_background to true only for a long command whose result you do " +
      "not need right away; you get a job ID at once and a <task_notification> later. Do not " +
      "poll or sleep waiting for it.",
  };
}

/** `/bg`: one line per job of this process, running and ended. */
export function describeJobs(jobs: BackgroundJobs, now = Date.now()): string {
  if (jobs.jobs.size === 0) return "No background jobs in this session.";
  return [...jobs.jobs.values()]
    .map((job) => {
      const seconds = (((job.endedAt ?? now) - job.startedAt) / 1000).toFixed(1);
      const waiting = job.status !== "running" && !job.delivered ? "  (not delivered yet)" : "";
      return `${job.id}  ${job.status.padEnd(9)}  ${seconds.padStart(6)}s  ${preview(job.command)}${waiting}`;
    })
    .join("\n");
}

function preview(command: string): string {
  const line = command.replace(/\s+/g, " ").trim();
  return line.length > COMMAND_PREVIEW ? `${line.slice(0, COMMAND_PREVIEW)}…` : line;
}

/**
 * Background jobs as a mechanism: the flag on the main agent's `bash`, the Background
 * section, the notifications before each of its model calls, `/bg`, and the end of every
 * job when the session ends. Subagents keep plain `bash`.
 */
export function backgroundMechanism(
  harness: Pick<Harness, "env" | "workdir" | "printer" | "log">,
): Mechanism {
  const jobs = new BackgroundJobs({
    workdir: harness.workdir,
    timeoutMs: positiveIntVar(harness.env, "BACKGROUND_TIMEOUT_MS", BACKGROUND_TIMEOUT_MS),
    say: (text) => harness.printer.line(text, "dim"),
    log: (title, text) => harness.log.transcript(title, text),
  });
  const seams: LoopSeams = {
    async beforeModelCall(messages, run) {
      const ended = jobs.collect();
      const count = injectNotifications(messages, ended);
      if (count === 0) return;
      harness.printer.line(`  [inject] ${count} background notification(s)`, "dim");
      harness.log.transcript(
        "INJECTED BACKGROUND NOTIFICATIONS",
        ended.map(notificationText).join("\n"),
        run.scope,
      );
    },
  };
  return {
    name: "background",
    extendTool: (tool, role: Role) =>
      tool.name === "bash" && role === "main"
        ? (withBackgroundFlag(tool, jobs) as ToolDefinition)
        : tool,
    sections: (role) => (role === "main" ? [backgroundSection()] : []),
    loop: (run) => (run.role === "main" ? seams : null),
    commands: {
      bg: {
        description: "list this session's background jobs",
        run: async () => {
          harness.printer.line(describeJobs(jobs));
          return undefined;
        },
      },
    },
    close: () => jobs.stop(),
  };
}
