/**
 * s01: Agent Loop — the whole harness is one loop and one tool.
 *
 *   user line ──> messages ──> model ──> reply
 *                    ^                    │ tool_use?
 *                    │   yes              v
 *                    └── tool_result <── bash(command)
 *                        no: print the reply's text, wait for the next line
 *
 * Run it:  pnpm --filter s01 start    (no key configured: the offline demo runs)
 *          pnpm --filter s01 demo
 * New here: everything — the loop (loop.ts), bash (bash.ts), the block list (guard.ts), the
 * REPL (repl.ts), the system prompt (prompt.ts), and the mechanism contract
 * (contract.ts) with the harness that joins mechanisms (harness.ts). `shared` supplies
 * configuration, the client, the line reader, printing and the session log.
 *
 * This file is configuration plus the ordered list of the chapter's mechanisms; each later
 * chapter adds one entry. The order is the order of tools, prompt sections and seams.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { guardMechanism } from "./guard.ts";
import { runHarness } from "./harness.ts";

export const CHAPTER = { id: "s01", title: "Agent Loop" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [bashMechanism(harness), guardMechanism()]);
}

runIfEntry(import.meta.url, main);
