/**
 * A lock file: at most one process at a time holds `<file>`, which it creates exclusively
 * with its pid and the time inside, and removes when it is done.
 *
 *   take     create `<file>` exclusively (linked in whole) ──> held
 *            exists, its pid alive       ──> busy: try again until the wait is over
 *            exists, its pid gone        ──> stale: reclaim it, then take it
 *   reclaim  rename `<file>` aside (atomic: only one process can move it) ──> is what moved
 *            the lock judged stale? yes: delete it. no (its holder let go and another took
 *            it meanwhile): put it back where its holder expects it
 *   release  delete `<file>` if it is still ours
 *
 * Two processes that reclaim one stale lock at once never both hold it: only one rename can
 * move the file, and the other finds nothing to move or a fresh lock it puts back. A lock
 * that cannot be read (a torn write: its writer died mid-line) counts as stale once it is
 * older than `tornMs`. A directory or an unreadable file in the lock's place is an error:
 * no one will ever release it.
 */
import { randomBytes } from "node:crypto";
import { linkSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";

/** Who holds a lock, as its file says. */
export interface LockHolder {
  /** Null when the content is not a lock's (torn, or not JSON with a pid). */
  pid: number | null;
  text: string;
  mtimeMs: number;
  /** Why the file cannot be read at all (EISDIR, EACCES …), or null. */
  error: string | null;
}

export interface LockOptions {
  /** How long `acquire` waits for a live holder; 0 gives up at once. */
  waitMs: number;
  /** How often a waiting `acquire` tries again. */
  retryMs: number;
  /** A lock that cannot be read counts as stale after this long. */
  tornMs: number;
  /** Told each time a stale lock was reclaimed (the user sees one line). */
  onReclaim?(holder: LockHolder): void;
}

/** The lock is held by a live process (`holder`), or cannot be read at all. */
export class LockError extends Error {
  readonly holder: LockHolder;
  constructor(message: string, holder: LockHolder) {
    super(message);
    this.name = "LockError";
    this.holder = holder;
  }
}

export class LockFile {
  readonly file: string;
  private readonly options: LockOptions;
  /** The content of the lock this process holds, or null. */
  private held: string | null = null;

  constructor(file: string, options: LockOptions) {
    this.file = file;
    this.options = options;
  }

  /** One try, no waiting: true when the lock is ours now, false when a live process holds it. */
  tryAcquire(): boolean {
    return this.attempt() === null;
  }

  /** Takes the lock; throws a LockError when it stays busy past the wait, or cannot be read. */
  async acquire(): Promise<void> {
    const deadline = Date.now() + this.options.waitMs;
    for (;;) {
      const holder = this.attempt();
      if (holder === null) return;
      if (Date.now() >= deadline) {
        throw new LockError(`locked by pid ${holder.pid ?? "unknown"}`, holder);
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.retryMs));
    }
  }

  /** Removes the lock if this process still holds it. */
  release(): void {
    if (this.held === null) return;
    removeIfUnchanged(this.file, this.held);
    heldLocks.delete(this.file);
    this.held = null;
  }

  /** One try: null when the lock is ours now, else its live holder. */
  private attempt(): LockHolder | null {
    for (;;) {
      const content = `${JSON.stringify({ pid: process.pid, time: new Date().toISOString() })}\n`;
      if (createExclusive(this.file, content)) {
        this.held = content;
        holdLock(this.file, content);
        return null;
      }
      const holder = readLock(this.file);
      if (holder === null) continue; // released meanwhile: try again at once
      if (holder.error !== null) {
        throw new LockError(`not a lock file this harness can read (${holder.error})`, holder);
      }
      const stale =
        holder.pid === null
          ? Date.now() - holder.mtimeMs >= this.options.tornMs
          : !processAlive(holder.pid);
      if (!stale) return holder;
      if (reclaim(this.file, holder.text)) this.options.onReclaim?.(holder);
    }
  }
}

/** The lock's holder, or null when there is no lock. */
export function readLock(file: string): LockHolder | null {
  let text: string;
  let mtimeMs: number;
  try {
    text = readFileSync(file, "utf8");
    mtimeMs = statSync(file).mtimeMs;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    if (code === "ENOENT") return null;
    return { pid: null, text: "", mtimeMs: 0, error: code };
  }
  try {
    const pid = (JSON.parse(text) as { pid?: unknown }).pid;
    return {
      pid: Number.isInteger(pid) && (pid as number) > 0 ? (pid as number) : null,
      text,
      mtimeMs,
      error: null,
    };
  } catch {
    return { pid: null, text, mtimeMs, error: null };
  }
}

/** Whether the process `pid` still runs. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Creates `file` holding `content` if no file is there; false when one is. The content is
 * written to a file of its own first and linked into place, so no other process ever reads
 * a lock half-written (which would look torn, and so stale).
 */
function createExclusive(file: string, content: string): boolean {
  const fresh = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.new`;
  writeFileSync(fresh, content, { flag: "wx" });
  try {
    linkSync(fresh, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(fresh);
  }
}

/**
 * Takes away the stale lock `file` that held `staleText`: true when this process removed
 * it. The file is first moved aside, so no other process can remove or replace it meanwhile;
 * a lock that turns out not to be the stale one goes back.
 */
function reclaim(file: string, staleText: string): boolean {
  const aside = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.stale`;
  try {
    renameSync(file, aside);
  } catch {
    return false; // another process moved it first
  }
  let moved = "";
  try {
    moved = readFileSync(aside, "utf8");
  } catch {
    // unreadable: treated as not the stale one, so it goes back
  }
  if (moved === staleText) {
    unlinkSync(aside);
    return true;
  }
  try {
    linkSync(aside, file);
  } catch {
    // A third process took the free name meanwhile; the lock we moved is lost to its holder.
  }
  unlinkSync(aside);
  return false;
}

/** Removes `file` if it still holds `text` (not a lock someone took after we read it). */
function removeIfUnchanged(file: string, text: string): boolean {
  try {
    if (readFileSync(file, "utf8") !== text) return false;
    unlinkSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Locks this process holds, removed if it exits while holding one. */
const heldLocks = new Map<string, string>();
let exitHook = false;

function holdLock(file: string, text: string): void {
  heldLocks.set(file, text);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const [lock, content] of heldLocks) removeIfUnchanged(lock, content);
  });
}
