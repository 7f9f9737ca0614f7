/**
 * Agent teams (s13): the agent at the prompt becomes a lead, and teammates work beside it.
 *
 * One agent cannot hold a large job in one context, nor work on three things at once. A
 * teammate is the chapter's own loop, run concurrently in this process with its own
 * messages, prompt, tools and working directory. It never sees the lead's conversation:
 *
 *   lead ──spawn_teammate──> alice  WORK: the loop, to a reply without tool calls
 *                                   ──result, idle_notification──> lead's mailbox
 *                                   IDLE: wait for mail (every 2 s: claim a ready task)
 *                                   ──> WORK …  until a shutdown request is accepted
 *   lead's mailbox ──> one [Team events] turn of the lead (an event source of the REPL)
 *
 * Work is shared on s10's task board (one task per owner, claims under the store's lock),
 * talk goes through mailbox.ts, requests that need an answer (shutdown, plan approval)
 * through protocols.ts, and a task may carry its own checkout (worktrees.ts). A teammate
 * has the same permission and hook pipeline as the lead but no terminal: a call that
 * needs approval is denied and the lead is told. When the session ends every teammate
 * stops, and its unfinished task goes back to the board.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  asObject,
  describeApiError,
  type EventSink,
  invalidInput,
  isAbortError,
  type ModelClient,
  type Parsed,
  positiveIntVar,
  type Tone,
  type ToolDefinition,
  type ToolOutput,
  type ToolTarget,
  type UsageMeter,
} from "shared";
import type { LoopSeams, Mechanism, RunContext, SlashCommand } from "./contract.ts";
import type { AgentSetup, Harness } from "./harness.ts";
import { agentLoop } from "./loop.ts";
import { MAILBOX_NAME, Mailbox, runName, type TeamMessage } from "./mailbox.ts";
import type { PromptSection } from "./prompt.ts";
import { formatTeamEvents, Protocols } from "./protocols.ts";
import { boardTools, OWNER, type OwnerClaims } from "./tasks.ts";
import { TASK_ID, type Task, TaskError, TaskStore } from "./tasks-store.ts";
import { Worktrees } from "./worktrees.ts";

type MessageParam = Anthropic.MessageParam;

/** The lead's mailbox name (its task owner name stays s10's `agent`). */
export const LEAD = "lead";
/** Names the runtime keeps for itself, compared case-insensitively. */
export const RESERVED = [LEAD, OWNER];
export const MAX_TEAMMATES = 5;
/** Model calls one WORK phase may make before the teammate is stopped. */
export const MAX_WORK_CALLS = 50;
/** How often an idle teammate looks at the board; `TEAM_IDLE_SCAN_MS` overrides it. */
export const IDLE_SCAN_MS = 2_000;
/** The lead's inbox is also checked this often (a send in this process wakes it at once). */
export const LEAD_POLL_MS = 250;

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

export class TeamRuntime implements OwnerClaims {
  readonly teammates = new Map<string, Teammate>();
  readonly protocols: Protocols;
  private readonly options: TeamOptions;
  /** Worktree each claim checked before taking the lock (a binding is checked with git). */
  private readonly checkedBinding = new Map<string, string | null>();
  /** The teammates' board tools: list, claim, complete (owner = the caller's scope). */
  readonly boardTools: ToolDefinition[];
  private readonly claimTool: ToolDefinition<{ task_id: string }>;
  private spawned = false;
  private closing = false;

  constructor(options: TeamOptions) {
    this.options = options;
    this.protocols = new Protocols();
    const board = boardTools({
      store: options.store,
      owner: (context) => context.scope,
      emit: options.emit,
      claims: this,
    });
    this.boardTools = board.tools;
    this.claimTool = board.claim;
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

  private active(name: string): Teammate {
    const mate = this.teammates.get(name);
    if (!mate) throw new TaskError(`Teammate '${name}' is not active`);
    return mate;
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
      const claimed = await this.claim(mate, input.task_id);
      if (claimed.isError) {
        this.teammates.delete(name);
        throw new TaskError(
          `Cannot spawn teammate '${name}': ${claimed.content.replace(/^Error: /, "")}`,
        );
      }
      first += `\n\n${this.assignmentText("Assigned", mate)}`;
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

  /** `[Assigned task <id>] <subject>` (or Auto-claimed), its description and directory. */
  private assignmentText(how: "Assigned" | "Auto-claimed", mate: Teammate): string {
    const { taskId, cwd } = mate.assignment!;
    const task = this.options.store.load(taskId);
    const body = task.description ? `${task.subject}\n${task.description}` : task.subject;
    return `[${how} task ${taskId}] ${body}\nWork directory: ${cwd}`;
  }

  /** Claims `taskId` for `mate` through the same tool the teammate calls. */
  private claim(mate: Teammate, taskId: string): Promise<ToolOutput> {
    const context = {
      workdir: this.options.workdir,
      signal: mate.controller.signal,
      scope: mate.name,
    };
    return this.claimTool.run({ task_id: taskId }, context);
  }

  // --- Owner-scoped claims (tasks.ts calls these for a teammate's claim_task) ---------

  async prepare(taskId: string): Promise<void> {
    const task = this.options.store.load(taskId);
    try {
      await this.options.worktrees.cwdOf(task);
    } catch (error) {
      throw new TaskError(`Cannot claim ${taskId}: ${(error as Error).message}`);
    }
    this.checkedBinding.set(taskId, task.worktree ?? null);
  }

  check(task: Task, tasks: Task[], owner: string): void {
    const mate = this.teammates.get(owner);
    if (mate?.assignment) {
      throw new TaskError(
        `Owner ${owner} must finish the current work turn for ${mate.assignment.taskId} before claiming another task`,
      );
    }
    const held = tasks.find((t) => t.owner === owner && t.status === "in_progress");
    if (held)
      throw new TaskError(`Owner ${owner} must complete ${held.id} before claiming another task`);
    if (this.checkedBinding.get(task.id) !== (task.worktree ?? null)) {
      throw new TaskError(`Cannot claim ${task.id}: its worktree binding changed`);
    }
  }

  claimed(task: Task, owner: string): void {
    const mate = this.teammates.get(owner);
    if (!mate) return;
    const cwd =
      typeof task.worktree === "string"
        ? this.options.worktrees.pathOf(task.worktree)
        : this.options.workdir;
    mate.assignment = { taskId: task.id, cwd };
    this.bump(mate);
  }

  beforeComplete(taskId: string, owner: string): string | null {
    const gate = this.teammates.get(owner)?.gate;
    if (gate === "required" || gate === "pending" || gate === "rejected") {
      return `Task ${taskId} cannot complete while plan status is ${gate}`;
    }
    return null;
  }

  /** A claim or a release: a new work version; a plan requirement stays one. */
  private bump(mate: Teammate, resetGate = false): void {
    mate.version++;
    mate.requestId = null;
    if (resetGate) mate.gate = "not_required";
    else if (mate.gate !== "not_required") mate.gate = "required";
  }

  /** At the end of a WORK phase: a completed task's lease is dropped. */
  private releaseCompleted(mate: Teammate): void {
    if (!mate.assignment) return;
    const task = this.options.store.load(mate.assignment.taskId);
    if (task.status !== "completed" || task.owner !== mate.name) return;
    mate.assignment = null;
    this.bump(mate, true);
  }

  /** When a teammate stops: its unfinished task goes back to the board. */
  private async releaseAll(mate: Teammate): Promise<void> {
    const { tasks } = this.options.store.list();
    for (const task of tasks.filter((t) => t.owner === mate.name && t.status === "in_progress")) {
      await this.options.store.returnToBoard(task.id, mate.name);
      this.say(`  [release] ${task.subject} -> pending (was ${mate.name}'s)`, "warn");
    }
    mate.assignment = null;
    this.bump(mate, true);
  }

  /** Claims the first ready task (priority, then ID) for an idle teammate, or null. */
  private async claimNext(mate: Teammate): Promise<Task | null> {
    if (mate.assignment) return null;
    const { tasks } = this.options.store.list();
    if (tasks.some((t) => t.owner === mate.name && t.status === "in_progress")) return null;
    const ready = tasks
      .filter((t) => t.status === "pending" && t.owner === null)
      .filter((t) => this.options.store.incompleteDependencies(t, tasks).length === 0)
      .sort((a, b) => b.priority - a.priority || a.id.localeCompare(b.id));
    for (const task of ready) {
      const claimed = await this.claim(mate, task.id);
      if (!claimed.isError) return task;
    }
    return null;
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
        await this.releaseAll(mate);
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
    this.releaseCompleted(mate);
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
        const lines = this.handleInbox(mate, mail);
        if (lines === null) return "stop";
        if (lines.length > 0) {
          mate.messages.push({ role: "user", content: lines.join("\n") });
          return "work";
        }
        continue;
      }
      if (mate.status === "waiting_approval") continue;
      const task = await this.claimNext(mate);
      if (task) {
        const text = this.assignmentText("Auto-claimed", mate);
        mate.request = text;
        mate.messages.push({ role: "user", content: text });
        this.say(`  [idle] ${mate.name} claimed ${task.id}: ${task.subject}`, "accent");
        return "work";
      }
    }
  }

  /** The lines a batch of mail becomes, or null when a shutdown was accepted. */
  private handleInbox(mate: Teammate, mail: TeamMessage[]): string[] | null {
    const lines: string[] = [];
    for (const message of mail) {
      const id = message.metadata.request_id;
      if (message.type === "shutdown_request") {
        const state = this.protocols.acceptShutdown(message, mate.name, mate.status === "stopping");
        if (!state) {
          lines.push("[Ignored shutdown request: request mismatch]");
          continue;
        }
        mate.status = "stopping";
        this.mail.send(mate.name, LEAD, "Shutdown acknowledged.", "shutdown_response", {
          request_id: id,
          approve: true,
        });
        return null;
      }
      if (message.type === "plan_approval_response") {
        const state = this.protocols.planResponse(message, {
          name: mate.name,
          requestId: mate.requestId,
          version: mate.version,
          taskId: mate.assignment?.taskId ?? null,
        });
        if (!state) {
          lines.push("[Ignored plan response: request mismatch]");
          continue;
        }
        mate.gate = state.status === "approved" ? "approved" : "rejected";
        mate.status = "working";
        mate.requestId = null;
        const verdict = state.status === "approved" ? "approved" : "rejected";
        lines.push(`[Plan ${verdict}] ${message.content}`);
      } else if (message.type === "plan_request") lines.push(`[Plan required] ${message.content}`);
      else lines.push(`[Message from ${message.from}] ${message.content}`);
    }
    return lines;
  }

  /** The team's seams of one teammate's loop run (placed before every other mechanism's). */
  private seams(mate: Teammate): LoopSeams {
    return {
      // The inbox is read before every model call, so a shutdown wins before the next call.
      beforeModelCall: async (messages) => {
        const mail = this.options.mailbox.read(mate.name);
        if (mail.length > 0) {
          const lines = this.handleInbox(mate, mail);
          if (lines === null) throw new ShutdownAccepted();
          if (lines.length > 0) appendText(messages, lines.join("\n"));
        }
      },
      beforeToolCall: async (call, run) =>
        this.gate(mate, run.tools.get(call.name)?.target?.(call.input) ?? null),
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

  /**
   * Plan gate, then the lease, read from what the call touches (its tool's `target`): a
   * call that writes or runs a command waits for an approved plan, and any call that
   * touches the workspace needs a claimed task. A refusal, or null (the call runs in the
   * task's directory).
   */
  private async gate(mate: Teammate, target: ToolTarget | null): Promise<ToolOutput | null> {
    const refuse = (content: string): ToolOutput => ({ content, isError: true });
    if (target === null) return null;
    if (target.kind !== "read" && mate.gate !== "not_required" && mate.gate !== "approved") {
      return refuse(
        `Blocked: plan status is ${mate.gate}. Submit or revise the plan and wait for approval before changing the workspace.`,
      );
    }
    if (!mate.assignment) return refuse("Error: Claim a Task before using workspace tools.");
    try {
      const task = this.options.store.load(mate.assignment.taskId);
      if (
        task.owner !== mate.name ||
        (task.status !== "in_progress" && task.status !== "completed")
      ) {
        throw new TaskError(`Assignment for ${mate.name} is no longer active`);
      }
      if ((await this.options.worktrees.cwdOf(task)) !== mate.assignment.cwd) {
        throw new TaskError(`Assignment cwd changed for task ${task.id}`);
      }
    } catch (error) {
      return refuse(`Error: Invalid task assignment: ${(error as Error).message}`);
    }
    return null;
  }

  // --- Messages and protocols ---------------------------------------------------------

  /** send_message: the lead writes to an active teammate; a teammate to lead or a teammate. */
  message(from: string, to: string, content: string): string {
    if (from === LEAD) this.active(to);
    else if (to !== LEAD && !this.teammates.has(to))
      throw new TaskError(`Agent '${to}' is not active`);
    this.mail.send(from, to, content);
    return `Sent to ${to}`;
  }

  requestShutdown(name: string): string {
    this.active(name);
    const state = this.protocols.open({
      type: "shutdown",
      sender: LEAD,
      target: name,
      payload: "",
    });
    this.mail.send(LEAD, name, "Finish the current step and shut down.", "shutdown_request", {
      request_id: state.requestId,
    });
    return `Shutdown requested from ${name} (${state.requestId})`;
  }

  requestPlan(name: string, task: string): string {
    const mate = this.active(name);
    mate.gate = "required";
    this.mail.send(LEAD, name, task, "plan_request");
    return `Plan requested from ${name}`;
  }

  submitPlan(name: string, plan: string): string {
    const mate = this.active(name);
    if (mate.gate === "pending") return "A plan is already waiting for review.";
    const state = this.protocols.open({
      type: "plan_approval",
      sender: name,
      target: LEAD,
      payload: plan,
      workVersion: mate.version,
      taskId: mate.assignment?.taskId ?? null,
    });
    mate.gate = "pending";
    mate.status = "waiting_approval";
    mate.requestId = state.requestId;
    this.mail.send(name, LEAD, plan, "plan_approval_request", { request_id: state.requestId });
    return `Plan submitted (${state.requestId}). Wait for Lead's decision.`;
  }

  reviewPlan(requestId: string, approve: boolean, feedback?: string): string {
    const state = this.protocols.requests.get(requestId);
    if (!state) throw new TaskError(`Request ${requestId} not found`);
    if (state.type !== "plan_approval") throw new TaskError(`Request ${requestId} is not a plan`);
    if (state.status !== "pending")
      throw new TaskError(`Request ${requestId} already ${state.status}`);
    const mate = this.active(state.sender);
    if (state.workVersion !== mate.version || state.taskId !== (mate.assignment?.taskId ?? null)) {
      throw new TaskError(`Request ${requestId} belongs to an earlier assignment`);
    }
    if (mate.requestId !== requestId)
      throw new TaskError(`Request ${requestId} is not the current plan`);
    state.status = approve ? "approved" : "rejected";
    const content =
      feedback || (approve ? "Plan approved." : "Revise the plan and submit it again.");
    this.mail.send(LEAD, mate.name, content, "plan_approval_response", {
      request_id: requestId,
      approve,
    });
    return `Plan ${state.status} (${requestId})`;
  }

  /** The lead's inbox, taken whole; responses settle their requests (or are reported). */
  consumeLeadInbox(): TeamMessage[] {
    const messages = this.options.mailbox.read(LEAD);
    for (const message of messages) {
      if (!message.type.endsWith("_response") || message.metadata.request_id === undefined)
        continue;
      const problem = this.protocols.matchResponse(message);
      if (problem)
        this.say(`  [protocol] ignored ${message.type} from ${message.from}: ${problem}`, "warn");
    }
    return messages;
  }

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

  /** `/tasks release <id>`: an in-progress task whose owner is not active here goes back. */
  async release(taskId: string): Promise<string> {
    const task = this.options.store.load(taskId.trim());
    if (task.status !== "in_progress") {
      throw new TaskError(`${task.id} is ${task.status}, not in progress; nothing to release`);
    }
    if (task.owner === OWNER || (task.owner && this.teammates.has(task.owner))) {
      throw new TaskError(`${task.id} is owned by ${task.owner}, who is active in this run`);
    }
    await this.options.store.returnToBoard(task.id);
    return `Released ${task.id} (${task.subject}): pending, no owner (was ${task.owner ?? "nobody"}'s)`;
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

// --- Tools ---------------------------------------------------------------------------

interface SpawnInput {
  name: string;
  role: string;
  prompt: string;
  task_id?: string;
  require_plan?: boolean;
}

type Field = "string" | "boolean";

/** The input check of the team tools: an object with these fields (`?` = optional). */
function fields<T>(tool: string, input: unknown, spec: Record<string, Field>): Parsed<T> {
  const object = asObject(input);
  if (!object) return invalidInput(tool, "input must be an object");
  const value: Record<string, unknown> = {};
  for (const [key, type] of Object.entries(spec)) {
    const name = key.replace(/\?$/, "");
    if (object[name] === undefined) {
      if (key.endsWith("?")) continue;
      return invalidInput(tool, `${name} is required`);
    }
    if (typeof object[name] !== type) return invalidInput(tool, `${name} must be a ${type}`);
    value[name] = object[name];
  }
  return { ok: true, value: value as T };
}

function schema(properties: Record<string, object>, required: string[]) {
  return { type: "object" as const, properties, required };
}

const STRING = { type: "string" };

/** A tool whose refusals (TaskError and the like) become `Error: …` results. */
function teamTool<T>(
  name: string,
  description: string,
  input_schema: ToolDefinition["input_schema"],
  spec: Record<string, Field>,
  run: (input: T, context: RunContext) => string | Promise<string>,
): ToolDefinition {
  return {
    name,
    aliases: [],
    description,
    input_schema,
    parse: (input) => fields<T>(name, input, spec),
    run: async (input, context) => {
      try {
        return { content: await run(input as T, context as RunContext) };
      } catch (error) {
        return { content: `Error: ${(error as Error).message}`, isError: true };
      }
    },
  };
}

/** The lead's seven team tools, in the order the model sees them. */
export function leadTools(team: TeamRuntime, worktrees: Worktrees): ToolDefinition[] {
  return [
    teamTool<SpawnInput>(
      "spawn_teammate",
      "Start a persistent teammate with its own context. Pass task_id to assign a ready task; " +
        "require_plan makes it submit a plan before changing anything.",
      schema(
        {
          name: { type: "string", pattern: MAILBOX_NAME.source },
          role: STRING,
          prompt: STRING,
          task_id: { type: "string", pattern: TASK_ID.source },
          require_plan: { type: "boolean" },
        },
        ["name", "role", "prompt"],
      ),
      {
        name: "string",
        role: "string",
        prompt: "string",
        "task_id?": "string",
        "require_plan?": "boolean",
      },
      (input) => team.spawn(input),
    ),
    teamTool("list_teammates", "List active teammates and their status.", schema({}, []), {}, () =>
      team.list(),
    ),
    teamTool<{ to: string; content: string }>(
      "send_message",
      "Send a message to an active teammate.",
      schema({ to: STRING, content: STRING }, ["to", "content"]),
      { to: "string", content: "string" },
      ({ to, content }) => team.message(LEAD, to, content),
    ),
    teamTool<{ teammate: string }>(
      "request_shutdown",
      "Ask a teammate to finish its current step and shut down.",
      schema({ teammate: STRING }, ["teammate"]),
      { teammate: "string" },
      ({ teammate }) => team.requestShutdown(teammate),
    ),
    teamTool<{ teammate: string; task: string }>(
      "request_plan",
      "Require a plan from a teammate before it changes the workspace.",
      schema({ teammate: STRING, task: STRING }, ["teammate", "task"]),
      { teammate: "string", task: "string" },
      ({ teammate, task }) => team.requestPlan(teammate, task),
    ),
    teamTool<{ request_id: string; approve: boolean; feedback?: string }>(
      "review_plan",
      "Approve or reject a submitted plan by its request_id.",
      schema({ request_id: STRING, approve: { type: "boolean" }, feedback: STRING }, [
        "request_id",
        "approve",
      ]),
      { request_id: "string", approve: "boolean", "feedback?": "string" },
      ({ request_id, approve, feedback }) => team.reviewPlan(request_id, approve, feedback),
    ),
    teamTool<{ name: string; task_id: string }>(
      "create_worktree",
      "Create a git worktree on branch wt/<name> for a pending, unowned task; whoever claims " +
        "the task works there. A working directory, not a sandbox.",
      {
        ...schema(
          {
            name: {
              type: "string",
              pattern: "^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
              maxLength: 64,
            },
            task_id: STRING,
          },
          ["name", "task_id"],
        ),
        additionalProperties: false,
      },
      { name: "string", task_id: "string" },
      ({ name, task_id }) => worktrees.create(name, task_id),
    ),
  ];
}

/** A teammate's own tools after the board's three: send_message and submit_plan. */
export function teammateTools(team: TeamRuntime): ToolDefinition[] {
  return [
    ...team.boardTools,
    teamTool<{ to: string; content: string }>(
      "send_message",
      "Send an intermediate message to lead or an active teammate (your final reply reaches lead by itself).",
      schema({ to: STRING, content: STRING }, ["to", "content"]),
      { to: "string", content: "string" },
      ({ to, content }, context) => team.message(context.scope, to, content),
    ),
    teamTool<{ plan: string }>(
      "submit_plan",
      "Submit your plan to lead and wait for its decision before changing the workspace.",
      schema({ plan: STRING }, ["plan"]),
      { plan: "string" },
      ({ plan }, context) => team.submitPlan(context.scope, plan),
    ),
  ];
}

/** The lead's section (stable, after the earlier chapters' sections). */
export function teamSection(): PromptSection {
  return {
    id: "team",
    text:
      "Team: for work that splits into parallel parts, propose a small team (names, roles, " +
      "what each does) and wait for the user's confirmation before spawn_teammate. Delegate by " +
      "creating a Task per parallel change; pass task_id when assigning ready work, and idle " +
      "teammates claim ready tasks by themselves. A teammate completes its current Task before " +
      "claiming another. Create a worktree only when separate directories prevent conflicts; " +
      "it changes the default directory only and is not a sandbox, and removing it stays with " +
      "the user. After spawning or messaging, end the turn instead of polling: the runtime " +
      "delivers [Team events] as a new turn; react to them. Shut teammates down with " +
      "request_shutdown when the work is done. Your task owner name is agent; teammates write " +
      "to you as lead.",
  };
}

/** Every teammate's section (its name and role follow at the end of its prompt). */
export function teammateSection(): PromptSection {
  return {
    id: "teammate",
    text:
      "Teammate: you are one of a team led by lead. Complete your assigned Task, call " +
      "complete_task, then reply with a concise result; the runtime delivers your final text " +
      "to lead. Do not claim an [Assigned task] again. When asked for a plan, call submit_plan " +
      "and wait for the decision before changing files or using bash. Your tools work in your " +
      "Task's directory, which is not a sandbox. Use send_message only for intermediate " +
      "coordination; address the coordinator as lead. Nothing here can ask the user: ask lead " +
      "for anything that needs approval.",
  };
}

/**
 * Teams as a mechanism: the lead's seven tools and Team section, the teammates' tools and
 * section, the lead's inbox as the REPL's "team" event source, `/team`, `/worktree
 * remove`, `/tasks release`, and every teammate stopped when the session ends.
 */
export function teamsMechanism(
  harness: Pick<
    Harness,
    "workdir" | "client" | "model" | "emit" | "usage" | "log" | "printer" | "env" | "agent"
  >,
): Mechanism {
  const say = (text: string, tone: Tone) =>
    harness.emit({ type: "notice", scope: "main", text, tone });
  const store = new TaskStore(harness.workdir, { say: (text) => say(text, "warn") });
  const mailbox = new Mailbox({ workdir: harness.workdir, run: runName(harness.log), say });
  const worktrees = new Worktrees({
    workdir: harness.workdir,
    store,
    say: (text) => say(text, "accent"),
  });
  const team = new TeamRuntime({
    workdir: harness.workdir,
    client: harness.client,
    model: harness.model,
    emit: harness.emit,
    usage: harness.usage,
    store,
    mailbox,
    worktrees,
    agent: (name) => harness.agent("teammate", name),
    idleScanMs: positiveIntVar(harness.env, "TEAM_IDLE_SCAN_MS", IDLE_SCAN_MS),
  });
  const lead = leadTools(team, worktrees);
  const mates = teammateTools(team);
  let lastRequest = "";
  let queued = false;
  let poll: NodeJS.Timeout | null = null;
  const guarded = async (work: () => Promise<string>) => {
    try {
      harness.printer.line(await work());
    } catch (error) {
      harness.printer.line(`Error: ${(error as Error).message}`, "warn");
    }
    return undefined;
  };
  const worktreeCommand: SlashCommand = {
    description:
      "remove <name> [--discard]: remove a worktree whose tasks are done (its branch stays)",
    run: (args) =>
      guarded(async () => {
        const [verb, name, flag] = args.trim().split(/\s+/);
        if (verb !== "remove" || !name || (flag !== undefined && flag !== "--discard")) {
          throw new TaskError("usage: /worktree remove <name> [--discard]");
        }
        const usedBy = (dir: string) =>
          [...team.teammates.values()].filter((m) => m.assignment?.cwd === dir).map((m) => m.name);
        return worktrees.remove(name, flag === "--discard", usedBy);
      }),
  };
  return {
    name: "teams",
    tools: (role) => (role === "main" ? lead : role === "teammate" ? mates : []),
    sections: (role) =>
      role === "main" ? [teamSection()] : role === "teammate" ? [teammateSection()] : [],
    commands: {
      team: {
        description: "the teammates (role, state, plan, task, tokens) and the worktrees",
        run: async () => {
          harness.printer.line(team.describe());
          return undefined;
        },
      },
      worktree: worktreeCommand,
    },
    extendCommand: (name, command) =>
      name !== "tasks"
        ? command
        : {
            description: `${command.description}; /tasks release <task_id> puts a dead owner's task back`,
            run: (args, context) => {
              const release = /^release(?:\s+(\S+))?\s*$/.exec(args.trim());
              if (!release) return command.run(args, context);
              return guarded(async () => {
                if (!release[1]) throw new TaskError("usage: /tasks release <task_id>");
                return team.release(release[1]);
              });
            },
          },
    turn: {
      beforeTurn: async (turn) => {
        if (turn.kind === "user") lastRequest = turn.request;
      },
      afterTurn: async () => {
        if (team.allDone()) harness.printer.line("[all teammates shut down]", "dim");
      },
    },
    sources: [
      {
        kind: "team",
        start: (push) => {
          const wake = () => {
            if (queued) return;
            queued = true;
            push("wake");
          };
          mailbox.onSend((message) => {
            if (message.to === LEAD) wake();
          });
          poll = setInterval(() => {
            if (mailbox.peek(LEAD)) wake();
          }, LEAD_POLL_MS);
          poll.unref();
        },
        turn: async () => {
          queued = false;
          const events = team.consumeLeadInbox();
          if (events.length === 0) return null;
          harness.printer.line(`[wake: ${events.length} team event(s) -> new turn]`, "accent");
          return { kind: "team", request: lastRequest, content: formatTeamEvents(events) };
        },
      },
    ],
    close: async () => {
      if (poll) clearInterval(poll);
      await team.close();
    },
  };
}
