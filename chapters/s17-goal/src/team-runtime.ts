/**
 * The team runtime (s13): each teammate's record and its life, from spawn_teammate until it
 * stops. A teammate is the chapter's loop, run in this process with its own messages, prompt
 * and tools:
 *
 *   WORK  the loop, to a reply without tool calls; the team's seams come first (the inbox
 *         before every model call, the gate before every tool call) ──> result to the lead
 *   IDLE  wait for mail; with none, claim a ready task from the board ──> WORK …
 *
 * The runtime keeps the teammates; team-claims.ts holds their claims, leases and plan gate,
 * team-messages.ts what they and the lead send each other. A teammate that stops gives its
 * unfinished task back to the board, and `close` stops them all.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  describeApiError,
  type EventSink,
  isAbortError,
  type ModelClient,
  type Tone,
  type UsageMeter,
} from "shared";
import type { LoopSeams } from "./contract.ts";
import type { AgentSetup } from "./harness.ts";
import { agentLoop } from "./loop.ts";
import { MAILBOX_NAME, type Mailbox } from "./mailbox.ts";
import { TaskError } from "./task-record.ts";
import { OWNER } from "./tasks.ts";
import type { TaskStore } from "./tasks-store.ts";
import { TeamClaims } from "./team-claims.ts";
import { LEAD, TeamMessages } from "./team-messages.ts";
import type { Worktrees } from "./worktrees.ts";

type MessageParam = Anthropic.MessageParam;

/** Names the runtime keeps for itself, compared case-insensitively. */
export const RESERVED = [LEAD, OWNER];
export const MAX_TEAMMATES = 5;
/** Model calls one WORK phase may make before the teammate is stopped. */
export const MAX_WORK_CALLS = 50;
/** How often an idle teammate looks at the board; `TEAM_IDLE_SCAN_MS` overrides it. */
export const IDLE_SCAN_MS = 2_000;

export type TeammateStatus = "working" | "waiting_approval" | "idle" | "stopping";
export type PlanGate = "not_required" | "required" | "pending" | "approved" | "rejected";

/** The task a teammate works on and the directory its tools use (the "lease"). */
export interface Assignment {
  taskId: string;
  cwd: string;
}

export interface Teammate {
  name: string;
  role: string;
  status: TeammateStatus;
  gate: PlanGate;
  /** The teammate's current plan request, or null. */
  requestId: string | null;
  /** Bumped by every claim and release: a plan answer for an earlier version is stale. */
  version: number;
  assignment: Assignment | null;
  messages: MessageParam[];
  /** What compaction restates: the latest assignment. */
  request: string;
  controller: AbortController;
  done: Promise<void>;
}

/** A teammate's loop stops because it accepted a shutdown request. */
class ShutdownAccepted extends Error {}

export interface TeamOptions {
  workdir: string;
  client: ModelClient;
  model: string;
  emit: EventSink;
  usage: UsageMeter;
  store: TaskStore;
  mailbox: Mailbox;
  worktrees: Worktrees;
  /** Tools, prompt and seams of one teammate's loop run (harness.agent). */
  agent(name: string): AgentSetup;
  idleScanMs?: number;
}

/** What spawn_teammate takes. */
export interface SpawnInput {
  name: string;
  role: string;
  prompt: string;
  task_id?: string;
  require_plan?: boolean;
}

export class TeamRuntime {
  readonly teammates = new Map<string, Teammate>();
  /** Claims, leases and the plan gate (tasks.ts asks them for a teammate's claim_task). */
  readonly claims: TeamClaims;
  /** What the lead and the teammates send each other, and what each inbox becomes. */
  readonly messages: TeamMessages;
  private readonly options: TeamOptions;
  private spawned = false;
  private closing = false;

  constructor(options: TeamOptions) {
    this.options = options;
    this.claims = new TeamClaims(options, this.teammates);
    this.messages = new TeamMessages(options, this.teammates);
  }

  private get mail(): Mailbox {
    return this.options.mailbox;
  }

  private say(text: string, tone: Tone = "accent", scope = "main"): void {
    this.options.emit({ type: "notice", scope, text, tone });
  }

  private find(name: string): Teammate | undefined {
    const wanted = name.toLowerCase();
    return [...this.teammates.values()].find((mate) => mate.name.toLowerCase() === wanted);
  }

  // --- Spawning ------------------------------------------------------------------------

  async spawn(input: SpawnInput): Promise<string> {
    const { name, role } = input;
    if (!MAILBOX_NAME.test(name)) {
      throw new TaskError(
        "Invalid teammate name: use 1-64 letters, digits, underscores, or dashes",
      );
    }
    if (RESERVED.includes(name.toLowerCase())) {
      throw new TaskError(`'${name}' is reserved by the runtime`);
    }
    if (this.find(name)) throw new TaskError(`Teammate '${this.find(name)!.name}' already exists`);
    if (this.teammates.size >= MAX_TEAMMATES) {
      throw new TaskError(`Team is full (${MAX_TEAMMATES} active teammates)`);
    }
    const mate: Teammate = {
      name,
      role,
      status: "working",
      gate: input.require_plan ? "required" : "not_required",
      requestId: null,
      version: 0,
      assignment: null,
      messages: [],
      request: input.prompt,
      controller: new AbortController(),
      done: Promise.resolve(),
    };
    this.teammates.set(name, mate);
    let first = input.prompt;
    if (input.task_id !== undefined) {
      const claimed = await this.claims.claim(mate, input.task_id);
      if (claimed.isError) {
        this.teammates.delete(name);
        throw new TaskError(
          `Cannot spawn teammate '${name}': ${claimed.content.replace(/^Error: /, "")}`,
        );
      }
      first += `\n\n${this.claims.assignmentText("Assigned", mate)}`;
    }
    if (input.require_plan) {
      first +=
        "\n\n[Plan required] Submit a plan and wait for Lead approval before changing files or using bash.";
    }
    mate.request = first;
    mate.messages.push({ role: "user", content: first });
    this.spawned = true;
    mate.done = this.run(mate);
    this.say(`  [teammate] ${name} spawned as ${role}`);
    const what = input.task_id ? `for ${input.task_id}` : "without an initial Task";
    return `Teammate '${name}' spawned as ${role} ${what}. End this turn; the runtime will deliver its events.`;
  }

  // --- A teammate's life: WORK, IDLE, WORK … ------------------------------------------

  private async run(mate: Teammate): Promise<void> {
    const signal = mate.controller.signal;
    try {
      for (;;) {
        if ((await this.work(mate)) === "stop") break;
        if ((await this.idle(mate)) === "stop") break;
      }
    } catch (error) {
      if (!(error instanceof ShutdownAccepted) && !signal.aborted && !isAbortError(error)) {
        this.mail.send(mate.name, LEAD, describeApiError(error, this.options.model), "error");
      }
    } finally {
      try {
        await this.claims.releaseAll(mate);
      } catch (error) {
        this.mail.send(
          mate.name,
          LEAD,
          `Assignment cleanup failed: ${(error as Error).message}`,
          "error",
        );
      }
      this.teammates.delete(mate.name);
      this.say(`  [teammate] ${mate.name} finished`, "dim");
      // The lead may have read the last event already; else its next turn's end says so.
      if (!this.closing && this.allDone()) this.say("[all teammates shut down]", "dim");
    }
  }

  /** One WORK phase: the loop to a reply without tool calls, then its result to the lead. */
  private async work(mate: Teammate): Promise<"idle" | "stop"> {
    mate.status = "working";
    const setup = this.options.agent(mate.name);
    const result = await agentLoop(mate.messages, {
      client: this.options.client,
      model: this.options.model,
      tools: setup.tools,
      system: `${setup.system}\n\n${this.identity(mate)}`,
      scope: mate.name,
      role: "teammate",
      turn: "team",
      request: mate.request,
      // Its task's directory, asked before every call: a claim moves it there.
      workdir: () => mate.assignment?.cwd ?? this.options.workdir,
      maxTurns: MAX_WORK_CALLS,
      signal: mate.controller.signal,
      emit: this.options.emit,
      // The plan gate comes before the permission pipeline: the team's seams go first.
      seams: [this.seams(mate), ...setup.seams],
    });
    if (result.stopped === "max_turns") {
      this.mail.send(mate.name, LEAD, `stopped after ${MAX_WORK_CALLS} model calls`, "error");
      return "stop";
    }
    const first = result.response.content.find((block) => block.type === "text");
    const summary = first?.type === "text" ? first.text.trim() : "";
    if (summary) this.options.emit({ type: "text", scope: mate.name, text: summary });
    if (mate.gate !== "pending" && summary) this.mail.send(mate.name, LEAD, summary, "result");
    if (mate.gate === "pending") {
      mate.status = "waiting_approval";
      return "idle";
    }
    this.claims.releaseCompleted(mate);
    mate.status = "idle";
    this.mail.send(mate.name, LEAD, "Waiting for more work.", "idle_notification");
    return "idle";
  }

  /** The end of a teammate's prompt: who it is, and where its tools work once it has a task. */
  private identity(mate: Teammate): string {
    const who = `You are '${mate.name}', a ${mate.role}; your task owner name is ${mate.name}.`;
    return mate.assignment ? `${who} Your tools work in ${mate.assignment.cwd}.` : who;
  }

  /** IDLE: mail first; with none, a ready task from the board. */
  private async idle(mate: Teammate): Promise<"work" | "stop"> {
    const signal = mate.controller.signal;
    const scanMs = this.options.idleScanMs ?? IDLE_SCAN_MS;
    for (;;) {
      if (signal.aborted) return "stop";
      const mail = await this.options.mailbox.wait(mate.name, scanMs, signal);
      if (signal.aborted) return "stop";
      if (mail.length > 0) {
        const lines = this.messages.handleInbox(mate, mail);
        if (lines === null) return "stop";
        if (lines.length > 0) {
          mate.messages.push({ role: "user", content: lines.join("\n") });
          return "work";
        }
        continue;
      }
      if (mate.status === "waiting_approval") continue;
      const task = await this.claims.claimNext(mate);
      if (task) {
        const text = this.claims.assignmentText("Auto-claimed", mate);
        mate.request = text;
        mate.messages.push({ role: "user", content: text });
        this.say(`  [idle] ${mate.name} claimed ${task.id}: ${task.subject}`, "accent");
        return "work";
      }
    }
  }

  /** The team's seams of one teammate's loop run (placed before every other mechanism's). */
  private seams(mate: Teammate): LoopSeams {
    return {
      // The inbox is read before every model call, so a shutdown wins before the next call.
      beforeModelCall: async (messages) => {
        const mail = this.options.mailbox.read(mate.name);
        if (mail.length > 0) {
          const lines = this.messages.handleInbox(mate, mail);
          if (lines === null) throw new ShutdownAccepted();
          if (lines.length > 0) appendText(messages, lines.join("\n"));
        }
      },
      beforeToolCall: async (call, run) =>
        this.claims.gate(mate, run.tools.get(call.name)?.target?.(call.input) ?? null),
      // A call that needed an approval nobody here can give goes to the lead, who may run it.
      afterResults: (round) => {
        for (const { call, output } of round) {
          if (!output.denied?.approvable) continue;
          this.mail.send(
            mate.name,
            LEAD,
            `${call.name}(${JSON.stringify(call.input)}) needs approval (${output.denied.reason}); run it or add an allow rule.`,
            "permission_denied",
          );
        }
        return [];
      },
    };
  }

  // --- What the lead sees, and the end of the session ---------------------------------

  list(): string {
    const names = [...this.teammates.keys()].sort();
    if (names.length === 0) return "No active teammates.";
    return names.map((name) => `${name}: ${this.teammates.get(name)!.status}`).join("\n");
  }

  /** `/team`: each teammate with its role, state, plan gate, task and tokens; the worktrees. */
  describe(): string {
    const usage = this.options.usage.sessionByScope();
    const lines = [...this.teammates.values()].map((mate) => {
      const spent = usage.get(mate.name);
      const tokens = spent ? `${spent.input + spent.output} tokens` : "0 tokens";
      const task = mate.assignment ? `task ${mate.assignment.taskId}` : "no task";
      return `${mate.name} (${mate.role}): ${mate.status}, plan ${mate.gate}, ${task}, ${tokens}`;
    });
    if (lines.length === 0) lines.push("No teammates in this run.");
    try {
      for (const task of this.options.store.list().tasks) {
        if (typeof task.worktree !== "string") continue;
        const owner = task.owner ? `, ${task.owner}` : "";
        lines.push(`worktree ${task.worktree}: ${task.id} [${task.status}${owner}]`);
      }
    } catch (error) {
      lines.push(`[tasks] ${(error as Error).message}`);
    }
    return lines.join("\n");
  }

  /** True once, after the last teammate of this run has finished and its mail was read. */
  allDone(): boolean {
    if (!this.spawned || this.teammates.size > 0 || this.options.mailbox.peek(LEAD)) return false;
    this.spawned = false;
    return true;
  }

  /** The session ends: every teammate's loop is aborted; their tasks go back to the board. */
  async close(): Promise<void> {
    this.closing = true;
    const running = [...this.teammates.values()];
    for (const mate of running) mate.controller.abort();
    await Promise.allSettled(running.map((mate) => mate.done));
    this.options.store.close();
  }
}

/** Text after the last user message's blocks (tool results stay first). */
function appendText(messages: MessageParam[], text: string): void {
  const last = messages.at(-1);
  if (last?.role !== "user") {
    messages.push({ role: "user", content: text });
    return;
  }
  const blocks =
    typeof last.content === "string"
      ? [{ type: "text" as const, text: last.content }]
      : last.content;
  last.content = [...blocks, { type: "text", text }];
}
