/**
 * s12: Cron Scheduler — prompts that run at a local time, as turns of their own.
 *
 *   schedule_cron {cron: "0 9 * * 1-5", prompt} ──> cron_1a2b3c4d, kept in .harness/cron.json
 *        (durable) or for this session; list_crons and cancel_cron show and remove them
 *   every second the tick finds due jobs ──> the queue ──> one "cron" event in the REPL's
 *        queue ──> when the agent is idle, one scheduled turn: `[Scheduled] <prompt>`
 *   its first model response acknowledges the jobs; an API error puts them back with backoff
 *
 * Run it:  pnpm --filter s12 start    (no key configured: the offline demo runs)
 *          pnpm --filter s12 demo
 * New here: cron.ts (the clock, delivery, the tools), cron-parse.ts (expressions, through
 * croner), cron-store.ts (the jobs and the file), cron-scheduler.ts (the tick, the queue,
 * acknowledgement), one line in the list below. The REPL and the loop are unchanged: the
 * scheduler is an event source of the REPL, and acknowledgement sits at the aroundModelCall
 * seam.
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
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s12", title: "Cron Scheduler" };

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
  ]);
}

runIfEntry(import.meta.url, main);
