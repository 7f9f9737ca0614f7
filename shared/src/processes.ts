/**
 * Registry of child processes the harness started. Each child runs in its
 * own process group; `killAll` ends every group still alive, and runs on process exit so
 * a quitting REPL leaves nothing behind.
 */
import type { ChildProcess } from "node:child_process";

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Tracks `child` until it exits. `child` must have been spawned with `detached: true`. */
export function trackChild(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => killAll());
  }
}

/** Kills the whole process group of `child` (the shell and everything it started). */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}

export function killAll(signal: NodeJS.Signals = "SIGKILL"): number {
  let count = 0;
  for (const child of live) {
    killGroup(child, signal);
    count++;
  }
  live.clear();
  return count;
}

/**
 * Ends every group still alive the polite way: SIGTERM, `graceMs` for them to exit, then
 * SIGKILL for whatever is left (the end of a session with background jobs, s11).
 */
export async function endAll(graceMs = 50): Promise<number> {
  const children = [...live];
  for (const child of children) killGroup(child, "SIGTERM");
  if (children.length > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
  for (const child of children) killGroup(child, "SIGKILL");
  for (const child of children) live.delete(child);
  return children.length;
}

export function liveChildren(): number {
  return live.size;
}
