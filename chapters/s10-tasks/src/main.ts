/**
 * s10: Task System — a task graph on disk, with dependencies, claims and completion.
 *
 *   create_task × n ──> update_task (addBlockedBy: the exact IDs) ──> claim_task ──> complete_task
 *        .harness/tasks/task_<8 hex>.json, one file per task; every change holds .harness/tasks/.lock
 *   complete ──> "Unblocked: …" (the tasks this completion made startable); /tasks shows the graph
 *
 * Run it:  pnpm --filter s10 start    (no key configured: the offline demo runs)
 *          pnpm --filter s10 demo
 * New here: tasks.ts (the six tools, /tasks) and tasks-store.ts (the files, the cross-process
 * lock, the graph rules), one line in the list below. The loop is unchanged; todo_write stays
 * the in-session checklist, the task graph is the plan that survives a restart.
 */
import { type MainIO, runIfEntry } from "shared";
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

export const CHAPTER = { id: "s10", title: "Task System" };

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
  ]);
}

runIfEntry(import.meta.url, main);
