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
export function endAll(graceMs = 50): Promise<number> {
  return endGroups([...live], graceMs);
}

/** The same for some children only (s11: a session's background jobs, not the rest). */
export async function endGroups(children: ChildProcess[], graceMs = 50): Promise<number> {
  const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
  for (const child of running) killGroup(child, "SIGTERM");
  if (running.length > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
  for (const child of running) killGroup(child, "SIGKILL");
  for (const child of running) live.delete(child);
  return running.length;
}

export function liveChildren(): number {
  return live.size;
}
