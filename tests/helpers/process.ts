import { readFileSync } from "node:fs";

/**
 * True while `pid` runs. A killed process whose parent is gone can stay a zombie when the
 * machine's init does not reap it, so state Z counts as dead.
 */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** The pid a command wrote to `file` (write it to a temp name and `mv` it, so it is whole). */
export async function waitForPid(file: string, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const pid = Number(readFileSync(file, "utf8").trim());
      if (pid > 0) return pid;
    } catch {
      // not there yet
    }
    if (Date.now() > deadline) throw new Error(`no pid in ${file} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** True once `pid` has ended, polling for up to `timeoutMs` (a killed group dies at once). */
export async function endsWithin(pid: number, timeoutMs = 1000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

/** Kills `pid` if it still runs (cleanup after a test that expected it gone). */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** What `promise` resolves to, or "still running" when it takes longer than `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | "still running"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"still running">((resolve) => {
    timer = setTimeout(() => resolve("still running"), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
