/**
 * s11: Background Tasks — a slow command runs on its own; its result comes back later.
 *
 *   bash {command, run_in_background: true} ──> gates and hooks as always ──> bg_0001 started,
 *        the placeholder is the result at once; the job runs through the same runner
 *   before each model call: ended jobs ──> <task_notification> blocks in the last user
 *        message, after its tool results; /bg lists the jobs; the session's end ends them all
 *
 * Run it:  pnpm --filter s11 start    (no key configured: the offline demo runs)
 *          pnpm --filter s11 demo
 * New here: background.ts (the job table, the notifications, /bg), one line in the list
 * below. bash.ts is unchanged: the flag is added through extendTool; the loop is unchanged:
 * notifications join the request at its beforeModelCall seam.
 */
import { type MainIO, runIfEntry } from "shared";
import { backgroundMechanism } from "./background.ts";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { compactMechanism } from "./compact.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { memoryMechanism } from "./memory.ts";
import { permissionsMechanism } from "./permissions.ts";
import { skillsMechanism } from "./skills.ts";
import { subagentMechanism } from "./subagent.ts";
import { tasksMechanism } from "./tasks.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s11", title: "Background Tasks" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
    hooksMechanism(harness),
    todoMechanism(harness),
    subagentMechanism(harness),
    skillsMechanism(harness),
    commandsMechanism(harness),
    compactMechanism(harness),
    memoryMechanism(harness),
    tasksMechanism(harness),
    backgroundMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
