/**
 * The task store: one JSON file per task under `<WORKDIR>/.harness/tasks/`, a lock
 * that makes every change atomic across processes, and the graph rules.
 *
 *   .harness/tasks/task_1a2b3c4d.json   {"id", "subject", "description", "status", "owner",
 *   .harness/tasks/task_5e6f7a8b.json    "blockedBy", "priority", …unknown keys kept}
 *   .harness/tasks/.lock                {"pid", "time"} while one process changes the store
 *
 *   change = take the lock ──> read the files ──> check ──> write (temp file + rename) ──> release
 *
 * There is no cache: every call reads the folder again, so a second REPL on the same
 * workspace (or a restarted one) sees what the first wrote. The folder appears on the first
 * create; reading never makes it. A file that cannot be read as a task is reported with its
 * path and never rewritten. What a task holds and the checks it passes are task-record.ts.
 */
import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { harnessPath, writeFileAtomic } from "shared";
import { LockError, LockFile } from "./lockfile.ts";
import { isInside } from "./paths.ts";
import {
  checkPriority,
  checkTaskId,
  DEFAULT_PRIORITY,
  type Skipped,
  TASK_ID,
  type Task,
  TaskError,
  taskProblem,
} from "./task-record.ts";

/** How long a change waits for another process's lock before giving up. */
export const LOCK_WAIT_MS = 5_000;
/** How often a waiting change tries the lock again. */
export const LOCK_RETRY_MS = 25;
/** A lock whose content cannot be read is taken as torn (its writer died) after this long. */
export const TORN_LOCK_MS = 1_000;
export const MAX_ID_ATTEMPTS = 100;
export const LOCK_FILE = ".lock";
/** writeFileAtomic's temporary files: `<file>.<pid>.<8 hex>.tmp`. */
const TEMP_FILE = /^task_[0-9a-f]{8}\.json\.\d+\.[0-9a-f]{8}\.tmp$/;

export interface TaskStoreOptions {
  lockWaitMs?: number;
  lockRetryMs?: number;
  /** The 8 hex characters of a new ID (tests force collisions with it). */
  newId?: () => string;
  /** Prints one line (a stale lock removed). */
  say?: (text: string) => void;
}

type Read = { ok: true; task: Task } | { ok: false; reason: string; missing: boolean };

export class TaskStore {
  readonly workdir: string;
  readonly dir: string;
  private readonly newId: () => string;
  private readonly say: (text: string) => void;
  /** Every change is made under this lock (lockfile.ts), across processes. */
  private readonly lock: LockFile;

  constructor(workdir: string, options: TaskStoreOptions = {}) {
    this.workdir = workdir;
    this.dir = path.join(workdir, ".harness", "tasks");
    this.newId = options.newId ?? (() => randomBytes(4).toString("hex"));
    this.say = options.say ?? (() => {});
    this.lock = new LockFile(path.join(this.dir, LOCK_FILE), {
      waitMs: options.lockWaitMs ?? LOCK_WAIT_MS,
      retryMs: options.lockRetryMs ?? LOCK_RETRY_MS,
      tornMs: TORN_LOCK_MS,
      onReclaim: (holder) => {
        const who =
          holder.pid === null ? "an unreadable lock" : `pid ${holder.pid}, no longer running`;
        this.say(`[tasks] removed a stale lock (${who}): ${this.relative(this.lock.file)}`);
      },
    });
  }

  /** `.harness/tasks` must really lie inside the workspace (symlinks followed). */
  checkRoot(): void {
    if (!isInside(this.dir, this.workdir)) throw new TaskError("Task store escapes the workspace");
  }

  /** The file of task `id`, once the ID is known to be well formed. */
  pathOf(id: unknown): string {
    return path.join(this.dir, `${checkTaskId(id)}.json`);
  }

  /** A path as the user reads it: relative to the workspace. */
  relative(file: string): string {
    return path.relative(this.workdir, file).split(path.sep).join("/");
  }

  /** Task `id`, or a TaskError: not found, or the file's path and what is wrong with it. */
  load(id: string): Task {
    const file = this.pathOf(id);
    this.checkRoot();
    const read = this.read(file, id);
    if (read.ok) return read.task;
    if (read.missing) throw new TaskError(`Task not found: ${id}`);
    throw new TaskError(`${this.relative(file)}: ${read.reason}`);
  }

  /** Every task in file-name order, and every file that is not one (lock and temp files aside). */
  list(): { tasks: Task[]; skipped: Skipped[] } {
    this.checkRoot();
    let names: string[];
    try {
      names = readdirSync(this.dir).sort();
    } catch {
      return { tasks: [], skipped: [] };
    }
    const tasks: Task[] = [];
    const skipped: Skipped[] = [];
    for (const name of names) {
      if (name === LOCK_FILE || TEMP_FILE.test(name)) continue;
      const file = path.join(this.dir, name);
      const id = name.slice(0, -".json".length);
      const read =
        name.endsWith(".json") && TASK_ID.test(id)
          ? this.read(file, id)
          : ({ ok: false, reason: "not a task file (task_<8 hex>.json)", missing: false } as const);
      if (read.ok) tasks.push(read.task);
      else if (!read.missing) skipped.push({ file: this.relative(file), reason: read.reason });
    }
    return { tasks, skipped };
  }

  /** The direct prerequisites of `task` that are not completed (missing or unreadable ones too). */
  incompleteDependencies(task: Task, tasks = this.list().tasks): string[] {
    const byId = new Map(tasks.map((t) => [t.id, t]));
    return task.blockedBy.filter((dep) => byId.get(dep)?.status !== "completed");
  }

  canStart(id: string): boolean {
    return this.incompleteDependencies(this.load(id)).length === 0;
  }

  /** A new pending task with no edges (the folder is made now, on the first create). */
  async create(input: { subject: string; description?: string; priority?: number }): Promise<Task> {
    const subject = input.subject.trim();
    if (!subject) throw new TaskError("Task subject cannot be empty");
    const priority = checkPriority(input.priority);
    this.checkRoot();
    harnessPath(this.workdir, "tasks", LOCK_FILE);
    return this.locked(() => {
      for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt++) {
        const id = `task_${this.newId()}`;
        if (!TASK_ID.test(id)) throw new Error(`newId made a malformed ID: ${id}`);
        if (exists(this.pathOf(id))) continue;
        const task: Task = {
          id,
          subject,
          description: input.description ?? "",
          status: "pending",
          owner: null,
          blockedBy: [],
          priority,
        };
        this.save(task);
        return task;
      }
      throw new TaskError("Could not allocate a unique task ID");
    });
  }

  /**
   * Adds edges `id` ─blockedBy─> each of `deps`. The whole request is checked before
   * anything is written: a bad one leaves every file as it was.
   */
  async addDependencies(id: string, deps: string[]): Promise<{ task: Task; added: string[] }> {
    // Every ID becomes a file path: checked here too, whoever calls.
    checkTaskId(id);
    const wanted = [...new Set(deps.map(checkTaskId))];
    return this.change(() => {
      const task = this.load(id);
      if (task.status !== "pending" || task.owner !== null) {
        throw new TaskError(
          `Task ${id} dependencies can only be updated while pending and unowned`,
        );
      }
      const { tasks } = this.list();
      for (const dep of wanted) {
        if (dep === id) throw new TaskError("Task cannot depend on itself");
        const read = this.read(this.pathOf(dep), dep);
        if (!read.ok && read.missing) throw new TaskError(`Dependency not found: ${dep}`);
        if (!read.ok) {
          throw new TaskError(
            `Dependency ${dep} cannot be read (${this.relative(this.pathOf(dep))}: ${read.reason})`,
          );
        }
        if (!task.blockedBy.includes(dep) && reaches(tasks, dep, id)) {
          throw new TaskError(`Dependency cycle detected: ${id} -> ${dep}`);
        }
      }
      const added = wanted.filter((dep) => !task.blockedBy.includes(dep));
      if (added.length === 0) return { task, added };
      const next = { ...task, blockedBy: [...task.blockedBy, ...added] };
      this.save(next);
      return { task: next, added };
    });
  }

  /** `owner` takes a pending task whose prerequisites are all completed. */
  async claim(
    id: string,
    owner: string,
  ): Promise<{ ok: true; task: Task } | { ok: false; blockedBy: string[] }> {
    checkTaskId(id);
    return this.change(() => {
      const task = this.load(id);
      if (task.status !== "pending") {
        throw new TaskError(`Task ${id} is ${task.status}, cannot claim`);
      }
      const blockedBy = this.incompleteDependencies(task);
      if (blockedBy.length > 0) return { ok: false as const, blockedBy };
      const next: Task = { ...task, owner, status: "in_progress" };
      this.save(next);
      return { ok: true as const, task: next };
    });
  }

  /**
   * `owner` completes its task. `unblocked` is exactly what this completion made startable:
   * pending tasks with prerequisites that can start now and could not before.
   */
  async complete(id: string, owner: string): Promise<{ task: Task; unblocked: Task[] }> {
    checkTaskId(id);
    return this.change(() => {
      const task = this.load(id);
      if (task.status !== "in_progress") {
        throw new TaskError(`Task ${id} is ${task.status}, cannot complete`);
      }
      if (task.owner !== owner) {
        throw new TaskError(`Task ${id} is owned by ${task.owner}, not ${owner}`);
      }
      const waiting = (tasks: Task[]) =>
        tasks.filter(
          (t) =>
            t.status === "pending" &&
            t.blockedBy.length > 0 &&
            this.incompleteDependencies(t, tasks).length === 0,
        );
      const readyBefore = new Set(waiting(this.list().tasks).map((t) => t.id));
      const next: Task = { ...task, status: "completed" };
      this.save(next);
      const unblocked = waiting(this.list().tasks).filter((t) => !readyBefore.has(t.id));
      return { task: next, unblocked };
    });
  }

  /** Releases the lock if this store still holds it (the session's end). */
  close(): void {
    this.lock.release();
  }

  // -------------------------------------------------------------------------------------

  private read(file: string, id: string): Read {
    let text: string;
    try {
      if (!lstatSync(file).isFile()) {
        return { ok: false, reason: "not a regular file", missing: false };
      }
      text = readFileSync(file, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { ok: false, reason: "missing", missing: true };
      return { ok: false, reason: `cannot be read (${code ?? "error"})`, missing: false };
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { ok: false, reason: `invalid JSON (${(error as Error).message})`, missing: false };
    }
    const problem = taskProblem(value, id);
    if (problem) return { ok: false, reason: problem, missing: false };
    const task = value as Task;
    return { ok: true, task: { ...task, priority: task.priority ?? DEFAULT_PRIORITY } };
  }

  /** Pretty JSON, unknown keys where they were; temp file + rename. */
  private save(task: Task): void {
    writeFileAtomic(this.pathOf(task.id), `${JSON.stringify(task, null, 2)}\n`);
  }

  /** A change to existing tasks: without the folder there is nothing to change (or lock). */
  private change<T>(fn: () => T): Promise<T> {
    this.checkRoot();
    if (!exists(this.dir)) return Promise.resolve().then(fn);
    return this.locked(fn);
  }

  /** Runs `fn` (check and save, synchronous) while holding the lock; released on every path. */
  private async locked<T>(fn: () => T): Promise<T> {
    try {
      await this.lock.acquire();
    } catch (error) {
      if (!(error instanceof LockError)) throw error;
      throw new TaskError(
        error.holder.error === null
          ? `Task store is busy (locked by pid ${error.holder.pid ?? "unknown"})`
          : `${this.relative(this.lock.file)} is ${error.message}; remove it`,
      );
    }
    try {
      return fn();
    } finally {
      this.lock.release();
    }
  }
}

/** True when a path chain can be followed from `from` to `to` over blockedBy edges. */
function reaches(tasks: Task[], from: string, to: string): boolean {
  // A node missing or unreadable has no edges: it cannot close a cycle.
  const edges = new Map(tasks.map((task) => [task.id, task.blockedBy]));
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node === to) return true;
    if (seen.has(node)) continue;
    seen.add(node);
    stack.push(...(edges.get(node) ?? []));
  }
  return false;
}

function exists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}
