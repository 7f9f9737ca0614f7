/**
 * s09: Memory — durable knowledge across sessions, and the project's own instructions.
 *
 *   start:        CLAUDE.md, AGENTS.md ──> Project instructions (in every prompt)
 *   before turn:  typed line ──> recall (one small side call, or keywords) ──> system prompt:
 *                 … + Memory catalog (MEMORY.md) + Relevant memory records (the picked files)
 *   after turn:   the turn's dialogue ──> extraction (side call) ──> filters ──> .harness/memory/<slug>.md
 *                 store ≥ 10 records ──> consolidation (snapshot, merge, roll back on failure)
 *
 * Run it:  pnpm --filter s09 start    (no key configured: the offline demo runs)
 *          pnpm --filter s09 demo
 * New here: memory.ts (recall, the turn hooks, /memory), memory-extract.ts (extraction and
 * consolidation), memory-store.ts (the records and their index) and instructions.ts
 * (CLAUDE.md, AGENTS.md), one line in the list below. The loop is unchanged: extraction reads a per-turn journal filled through
 * its onAppend seam; recall and extraction are the REPL's beforeTurn and afterTurn steps,
 * so the answer is printed before anything is stored.
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
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s09", title: "Memory" };

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
  ]);
}

runIfEntry(import.meta.url, main);
