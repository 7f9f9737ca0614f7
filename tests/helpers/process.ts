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
