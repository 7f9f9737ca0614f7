/**
 * Worktrees (s13): a task may be bound to a `git worktree`, a second checkout of the
 * repository on its own branch, so two teammates editing in parallel do not write over
 * each other. Whoever claims the task works in that checkout.
 *
 *   create_worktree {name: "auth", task_id}   (lead only; the task must be pending, unowned)
 *     git worktree add -b wt/auth .harness/worktrees/auth HEAD   ──> task.worktree = "auth"
 *   claim ──> the owner's tools run in .harness/worktrees/auth
 *   /worktree remove auth [--discard]         (the user only; the branch wt/auth is kept)
 *
 * A worktree is a working directory, not a sandbox: a command there can still reach every
 * file the user can. Git runs with an argument list (no shell) and a timeout, and a binding
 * is used only while Git still lists the path on the expected branch.
 */
import { execFile } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { type Task, TaskError } from "./task-record.ts";
import type { TaskStore } from "./tasks-store.ts";

export const WORKTREE_NAME = /^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const GIT_TIMEOUT_MS = 30_000;
/** Git's output as the model sees it, at most this long. */
export const GIT_OUTPUT_CHARS = 5_000;
export const NAME_RULE =
  "worktree name must be 1-64 letters, digits, dots, underscores, or dashes, and start with a letter or digit";

export interface GitResult {
  ok: boolean;
  output: string;
}
/** Runs git with `args` in `cwd` (tests pass a fake to simulate failures). */
export type Git = (args: string[], cwd: string) => Promise<GitResult>;

export const runGit: Git = (args, cwd) =>
  new Promise((resolve) => {
    execFile(
      "git",
      args,
      { cwd, timeout: GIT_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`.trim() || "(no output)";
        resolve({ ok: !error, output: error?.killed ? `git timed out: ${output}` : output });
      },
    );
  });

/** One entry of `git worktree list --porcelain`. */
export interface WorktreeEntry {
  path: string;
  branch: string | null;
}

/** Parses the whole porcelain listing (blocks separated by blank lines). */
export function parsePorcelain(text: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  for (const block of text.split(/\n\s*\n/)) {
    let entry: WorktreeEntry | null = null;
    for (const line of block.split("\n")) {
      if (line.startsWith("worktree ")) entry = { path: line.slice(9), branch: null };
      else if (entry && line.startsWith("branch ")) entry.branch = line.slice(7);
    }
    if (entry) entries.push(entry);
  }
  return entries;
}

export function checkWorktreeName(name: unknown): string {
  if (typeof name !== "string" || !WORKTREE_NAME.test(name)) throw new TaskError(NAME_RULE);
  return name;
}

const clip = (text: string) =>
  text.length > GIT_OUTPUT_CHARS ? `${text.slice(0, GIT_OUTPUT_CHARS)}… (truncated)` : text;

export interface WorktreeOptions {
  workdir: string;
  store: TaskStore;
  git?: Git;
  say(text: string): void;
}

export class Worktrees {
  readonly dir: string;
  private readonly options: WorktreeOptions;
  private readonly git: Git;

  constructor(options: WorktreeOptions) {
    this.options = options;
    this.dir = path.join(options.workdir, ".harness", "worktrees");
    this.git = options.git ?? runGit;
  }

  pathOf(name: string): string {
    const file = path.join(this.dir, checkWorktreeName(name));
    if (path.dirname(file) !== this.dir) throw new TaskError(NAME_RULE);
    return file;
  }

  /** Every worktree Git lists for the workspace's repository. */
  async registry(): Promise<WorktreeEntry[]> {
    const listed = await this.git(["worktree", "list", "--porcelain"], this.options.workdir);
    if (!listed.ok)
      throw new TaskError(`Cannot read the worktree registry: ${clip(listed.output)}`);
    return parsePorcelain(listed.output);
  }

  /** Why worktree `name` cannot be used now, or null when it can. */
  async problem(name: string): Promise<string | null> {
    const dir = this.pathOf(name);
    const entry = (await this.registry()).find((e) => samePath(e.path, dir));
    if (!entry) return `worktree '${name}' is not registered with Git`;
    if (!existsSync(dir) || !statSync(dir).isDirectory()) return `worktree '${name}' is missing`;
    if (entry.branch !== `refs/heads/wt/${name}`) {
      return `worktree '${name}' is on ${entry.branch ?? "a detached HEAD"}, expected branch wt/${name}`;
    }
    return null;
  }

  /** The directory `task`'s work happens in: the workspace, or its usable worktree. */
  async cwdOf(task: Task): Promise<string> {
    if (typeof task.worktree !== "string") return this.options.workdir;
    const problem = await this.problem(task.worktree);
    if (problem) throw new TaskError(problem);
    return this.pathOf(task.worktree);
  }

  /** create_worktree: checks in order, `git worktree add`, then the binding. */
  async create(name: string, taskId: string): Promise<string> {
    const { store, workdir } = this.options;
    checkWorktreeName(name);
    const task = store.load(taskId);
    const free = (t: Task, tasks: Task[]) => {
      if (t.status !== "pending" || t.owner !== null) {
        throw new TaskError(`Task ${t.id} must be pending and unowned to bind a worktree`);
      }
      if (typeof t.worktree === "string") {
        throw new TaskError(`Task ${t.id} is already bound to worktree '${t.worktree}'`);
      }
      const other = tasks.find((o) => o.id !== t.id && o.worktree === name);
      if (other) throw new TaskError(`Worktree '${name}' is already bound to ${other.id}`);
    };
    free(task, store.list().tasks);
    const dir = this.pathOf(name);
    if (existsSync(dir)) throw new TaskError(`${this.relative(dir)} already exists`);
    const top = await this.git(["rev-parse", "--show-toplevel"], workdir);
    if (!top.ok || !samePath(top.output, workdir)) {
      throw new TaskError("Working directory must be the root of a Git repository");
    }
    const branch = `wt/${name}`;
    if (!(await this.git(["check-ref-format", "--branch", branch], workdir)).ok) {
      throw new TaskError(`'${branch}' is not a valid branch name`);
    }
    if (await this.branchExists(branch)) throw new TaskError(`Branch '${branch}' already exists`);
    if ((await this.registry()).some((e) => samePath(e.path, dir))) {
      throw new TaskError(`${this.relative(dir)} is already registered with Git`);
    }
    const added = await this.git(["worktree", "add", "-b", branch, dir, "HEAD"], workdir);
    if (!added.ok) {
      const left = await this.artifacts(name);
      if (left.length === 0) throw new TaskError(`Git error: ${clip(added.output)}`);
      throw new TaskError(
        `Partial operation: git worktree add failed (${clip(added.output)}) but left ${left.join(", ")}. ` +
          `Task ${taskId} remains unbound; no Git data was deleted. Check git worktree list and clean up by hand.`,
      );
    }
    try {
      await store.bind(taskId, name, free);
    } catch (error) {
      throw new TaskError(
        `Partial success: worktree '${name}' was created at ${this.relative(dir)} on ${branch}, but ` +
          `binding ${taskId} failed (${(error as Error).message}). The Git data is kept; manual recovery: ` +
          `bind the task by hand or remove the worktree with /worktree remove.`,
      );
    }
    this.options.say(`[worktree] created: ${name} at ${this.relative(dir)}`);
    return `Created worktree '${name}' at ${this.relative(dir)} on branch ${branch} for ${taskId}`;
  }

  /**
   * The user's `/worktree remove`: only for a worktree whose tasks are all completed and
   * that no teammate works in; changes block it unless discarded. The branch stays.
   */
  async remove(name: string, discard: boolean, usedBy: (dir: string) => string[]): Promise<string> {
    const { store } = this.options;
    const dir = this.pathOf(name);
    if (!(await this.registry()).some((e) => samePath(e.path, dir))) {
      throw new TaskError(`worktree '${name}' is not registered with Git`);
    }
    const bound = store.list().tasks.filter((t) => t.worktree === name);
    if (bound.length === 0) throw new TaskError(`worktree '${name}' is not bound to any task`);
    const active = bound.find((t) => t.status !== "completed");
    if (active) {
      throw new TaskError(
        `worktree '${name}' is bound to active task ${active.id}; complete it before removal`,
      );
    }
    const users = usedBy(dir);
    if (users.length > 0) {
      throw new TaskError(
        `worktree '${name}' is still in use by ${users.join(", ")}; wait for the turn to end`,
      );
    }
    const status = await this.git(["status", "--porcelain", "--ignored"], dir);
    if (!status.ok) throw new TaskError(`Cannot verify worktree '${name}': ${clip(status.output)}`);
    const changes = status.output === "(no output)" ? 0 : status.output.split("\n").length;
    if (changes > 0 && !discard) {
      throw new TaskError(
        `worktree '${name}' has ${changes} uncommitted change(s); preserve or discard them manually (or /worktree remove ${name} --discard)`,
      );
    }
    const args = ["worktree", "remove", ...(discard ? ["--force"] : []), dir];
    const removed = await this.git(args, this.options.workdir);
    if (!removed.ok) throw new TaskError(`Git error: ${clip(removed.output)}`);
    for (const task of bound) await store.bind(task.id, null);
    this.options.say(`[worktree] removed: ${name}`);
    return `Worktree '${name}' removed; branch 'wt/${name}' retained`;
  }

  private async branchExists(branch: string): Promise<boolean> {
    const args = ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`];
    return (await this.git(args, this.options.workdir)).ok;
  }

  /** What a failed add left behind: the folder, a registration, the branch. */
  private async artifacts(name: string): Promise<string[]> {
    const dir = this.pathOf(name);
    const left: string[] = [];
    if (existsSync(dir)) left.push(`the folder ${this.relative(dir)}`);
    const listed = await this.git(["worktree", "list", "--porcelain"], this.options.workdir);
    if (listed.ok && parsePorcelain(listed.output).some((e) => samePath(e.path, dir))) {
      left.push("a Git registration");
    }
    if (await this.branchExists(`wt/${name}`)) left.push(`the branch wt/${name}`);
    return left;
  }

  private relative(file: string): string {
    return path.relative(this.options.workdir, file).split(path.sep).join("/");
  }
}

/** Two paths name one folder (symlinks resolved where they exist). */
function samePath(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p.trim());
    } catch {
      return path.resolve(p.trim());
    }
  };
  return real(a) === real(b);
}
