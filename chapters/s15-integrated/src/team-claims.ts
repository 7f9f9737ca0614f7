/**
 * Team claims (s13): the team's side of s10's board, and what a claim gives a teammate.
 *
 *   claim_task ──> prepare (its worktree, before the lock) ──> check (under the lock: one
 *        task per owner) ──> claimed: the lease (the task, the directory its tools use)
 *        and a new work version (a plan answer for an earlier one is stale)
 *   each tool call ──> gate: a write or a command waits for an approved plan; any call
 *        that touches the workspace needs the lease
 *   completed ──> the lease is dropped; a teammate stops, /tasks release ──> the task
 *        goes back to the board
 *
 * tasks.ts asks these through `OwnerClaims`; the runtime claims for a teammate at spawn and
 * when it is idle, and the team's seams ask the gate.
 */
import type { Tone, ToolDefinition, ToolOutput, ToolTarget } from "shared";
import { type Task, TaskError } from "./task-record.ts";
import { boardTools, OWNER, type OwnerClaims } from "./tasks.ts";
import type { Teammate, TeamOptions } from "./team-runtime.ts";

/** Owner-scoped claims, the lease and the plan gate of the runtime's teammates. */
export class TeamClaims implements OwnerClaims {
  private readonly options: TeamOptions;
  private readonly teammates: Map<string, Teammate>;
  /** Worktree each claim checked before taking the lock (a binding is checked with git). */
  private readonly checkedBinding = new Map<string, string | null>();
  /** The teammates' board tools: list, claim, complete (owner = the caller's scope). */
  readonly boardTools: ToolDefinition[];
  private readonly claimTool: ToolDefinition<{ task_id: string }>;

  constructor(options: TeamOptions, teammates: Map<string, Teammate>) {
    this.options = options;
    this.teammates = teammates;
    const board = boardTools({
      store: options.store,
      owner: (context) => context.scope,
      emit: options.emit,
      claims: this,
    });
    this.boardTools = board.tools;
    this.claimTool = board.claim;
  }

  private say(text: string, tone: Tone = "accent", scope = "main"): void {
    this.options.emit({ type: "notice", scope, text, tone });
  }

  /** `[Assigned task <id>] <subject>` (or Auto-claimed), its description and directory. */
  assignmentText(how: "Assigned" | "Auto-claimed", mate: Teammate): string {
    const { taskId, cwd } = mate.assignment!;
    const task = this.options.store.load(taskId);
    const body = task.description ? `${task.subject}\n${task.description}` : task.subject;
    return `[${how} task ${taskId}] ${body}\nWork directory: ${cwd}`;
  }

  /** Claims `taskId` for `mate` through the same tool the teammate calls. */
  claim(mate: Teammate, taskId: string): Promise<ToolOutput> {
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
  releaseCompleted(mate: Teammate): void {
    if (!mate.assignment) return;
    const task = this.options.store.load(mate.assignment.taskId);
    if (task.status !== "completed" || task.owner !== mate.name) return;
    mate.assignment = null;
    this.bump(mate, true);
  }

  /** When a teammate stops: its unfinished task goes back to the board. */
  async releaseAll(mate: Teammate): Promise<void> {
    const { tasks } = this.options.store.list();
    for (const task of tasks.filter((t) => t.owner === mate.name && t.status === "in_progress")) {
      await this.options.store.returnToBoard(task.id, mate.name);
      this.say(`  [release] ${task.subject} -> pending (was ${mate.name}'s)`, "warn");
    }
    mate.assignment = null;
    this.bump(mate, true);
  }

  /** Claims the first ready task (priority, then ID) for an idle teammate, or null. */
  async claimNext(mate: Teammate): Promise<Task | null> {
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

  // --- The gate of a call, and /tasks release -----------------------------------------

  /**
   * Plan gate, then the lease, read from what the call touches (its tool's `target`): a
   * call that writes or runs a command waits for an approved plan, and any call that
   * touches the workspace needs a claimed task. A refusal, or null (the call runs in the
   * task's directory).
   */
  async gate(mate: Teammate, target: ToolTarget | null): Promise<ToolOutput | null> {
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
}
