/**
 * s15: Integrated Harness — the harness a person would use all day.
 *
 *   every model call (main agent, subagents, teammates, compaction, memory) ──> recovery:
 *        429, 529, 500, 502, 503, 504, no connection, a stream cut off ──> wait and call
 *        again (at most 3 times; backoff with jitter, or retry-after); two 529s in a row
 *        switch the rest of the turn to FALLBACK_MODEL_ID
 *
 *   the main agent's replies stream; Ctrl-C cancels the turn and keeps the session; a reply
 *        cut off at max_tokens is redone at 16 000; a finished background job wakes the agent
 *   every request carries prompt-cache breakpoints (the stable system prompt, the
 *        conversation so far)
 *
 * Run it:  pnpm --filter s15 start    (no key configured: the offline demo runs)
 *          pnpm --filter s15 demo
 * New here: recovery.ts (retries, fallback, max_tokens), interrupt.ts (history repair),
 * cost.ts (prompt caching), two lines in the list below; loop.ts, repl.ts and
 * background.ts are edited on purpose (chapters/edits.json).
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

export const CHAPTER = { id: "s15", title: "Integrated Harness" };

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
  ]);
}

runIfEntry(import.meta.url, main);
