/**
 * s04: Hooks — the loop announces events; whatever is registered for an event runs.
 *
 *   typed line ──> UserPromptSubmit ──> history ──> model
 *                                                    │ tool_use
 *            PreToolUse: logHook, then               v
 *            .claude/settings*.json hooks ──> block? ──yes──> tool_result (is_error)
 *                                                    │ no (maybe a new input, allow or ask)
 *                                                    v
 *                       permissions ──> run ──> PostToolUse ──> tool_result
 *                                                    │ no tool_use
 *                                                    v
 *                                     Stop ──> "keep going"? (at most 3 times) ──> model
 *
 * Run it:  pnpm --filter s04 start    (no key configured: the offline demo runs)
 *          pnpm --filter s04 demo
 * New here: hooks.ts (the hook bus and the sample hooks), command-hooks.ts (hooks from
 * .claude/settings*.json in Claude Code's shape) and transcript.ts (the conversation as
 * Claude Code writes it, for those hooks), one line in the list below. PreToolUse runs
 * where Claude Code runs it, before the permission gates: the loop gains a
 * reviewToolCall seam, and the gates honour a hook's "allow" or "ask" (the call's
 * verdict). The bus also plugs into afterToolCall, onStop and the REPL's prepare step
 * for UserPromptSubmit. This chapter shows what its sample hooks do (`showPasses`);
 * later chapters keep such lines in the session log.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { permissionsMechanism } from "./permissions.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s04", title: "Hooks" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
    hooksMechanism(harness, { showPasses: true }),
  ]);
}

runIfEntry(import.meta.url, main);
