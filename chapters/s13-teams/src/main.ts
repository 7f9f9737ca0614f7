/**
 * s13: Agent Teams — the agent at the prompt leads teammates that work beside it.
 *
 *   spawn_teammate {name, role, prompt, task_id?} ──> a teammate: the same loop, run
 *        concurrently with its own messages, prompt, tools and working directory
 *   teammates claim ready tasks from the s10 board (one each), work, and report:
 *        result, idle_notification ──> .harness/mailboxes/<run>/lead.jsonl
 *   the lead's inbox is an event source: one `[Team events]` turn of the lead
 *   shutdown and plan approval are requests matched by request_id; create_worktree gives a
 *        task its own git checkout
 *
 * Run it:  pnpm --filter s13 start    (no key configured: the offline demo runs)
 *          pnpm --filter s13 demo
 * New here: teams.ts (the mechanism, the event source), team-runtime.ts, team-claims.ts,
 * team-messages.ts and team-tools.ts (the runtime, its claims and messages, the tools),
 * mailbox.ts, protocols.ts, worktrees.ts, one line in the list below; tasks.ts and
 * tasks-store.ts gain owner-scoped claims and a task's worktree, and the loop asks for a
 * teammate's working directory before every tool call (chapters/edits.json says why).
 */
import { type MainIO, runIfEntry } from "shared";
import { backgroundMechanism } from "./background.ts";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { compactMechanism } from "./compact.ts";
import { cronMechanism } from "./cron.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { memoryMechanism } from "./memory.ts";
import { permissionsMechanism } from "./permissions.ts";
import { skillsMechanism } from "./skills.ts";
import { subagentMechanism } from "./subagent.ts";
import { tasksMechanism } from "./tasks.ts";
import { teamsMechanism } from "./teams.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s13", title: "Agent Teams" };

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
    cronMechanism(harness),
    teamsMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
