/**
 * s16: Workflow Runtime — saved scripts run many focused agent calls, and a killed run resumes.
 *
 *   Workflow {name: "review-changes", args: {changes}} ──> the saved script:
 *        audit × 4 dimensions (in parallel) ──> verify each finding ──> one sorted report
 *        every finished agent call journaled under .harness/workflows/; event and progress
 *        lines as they happen; the model sees one tool_result
 *   Workflow {name, resume_from_run_id} ──> the journal replays finished calls ("cached"),
 *        only what is new or failed runs again
 *
 * Run it:  pnpm --filter s16 start    (no key configured: the offline demo runs)
 *          pnpm --filter s16 demo
 * New here: workflow.ts (the tool, the mechanism), workflow-core.ts, workflow-journal.ts,
 * workflow-runtime.ts (a run, resume, /workflows), workflows/review-changes.ts, and one
 * line at the end of the list below.
 */
import { type MainIO, runIfEntry } from "shared";
import { backgroundMechanism } from "./background.ts";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { compactMechanism } from "./compact.ts";
import { costMechanism } from "./cost.ts";
import { cronMechanism } from "./cron.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { mcpMechanism } from "./mcp.ts";
import { memoryMechanism } from "./memory.ts";
import { permissionsMechanism } from "./permissions.ts";
import { pluginsMechanism } from "./plugins.ts";
import { recoveryMechanism } from "./recovery.ts";
import { skillsMechanism } from "./skills.ts";
import { subagentMechanism } from "./subagent.ts";
import { tasksMechanism } from "./tasks.ts";
import { teamsMechanism } from "./teams.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";
import { workflowMechanism } from "./workflow.ts";

export const CHAPTER = { id: "s16", title: "Workflow Runtime" };

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
    mcpMechanism(harness),
    pluginsMechanism(harness),
    costMechanism(harness),
    recoveryMechanism(harness),
    workflowMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
