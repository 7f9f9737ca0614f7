/**
 * s17: Goal Loop — the complete harness: a turn works toward a goal until an independent
 * evaluator agrees it is met.
 *
 *   /goal <condition> ──> a turn on the condition ──> the model stops calling tools
 *        ──> the goal gate (before the Stop hooks): one evaluator call with no tools
 *              not yet ──> four lines as a user message, and the loop goes on
 *              met / impossible / the block cap / an evaluator error ──> the turn ends
 *        every evaluation prints [goal] <action>: <reason>; records in .harness/goal.jsonl
 *
 * Run it:  pnpm --filter s17 start    (no key configured: the offline demo runs)
 *          pnpm --filter s17 demo
 * New here: goal.ts (the goal, the gate, /goal), goal-evaluator.ts (the evaluator's call
 * and what it reads) and one line at the end of the list below; the contract gains the
 * beforeStop seam and the mechanisms' busy() (chapters/edits.json).
 */
import { type MainIO, runIfEntry } from "shared";
import { backgroundMechanism } from "./background.ts";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { compactMechanism } from "./compact.ts";
import { costMechanism } from "./cost.ts";
import { cronMechanism } from "./cron.ts";
import { goalMechanism } from "./goal.ts";
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

export const CHAPTER = { id: "s17", title: "Goal Loop" };

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
    goalMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
