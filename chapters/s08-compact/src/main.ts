/**
 * s08: Context Compact — four layers keep a long session inside the context window.
 *
 *   around every model call:
 *     L3 budget   big results of the newest batch ──> .harness/tool-results/ (a preview stays)
 *     L1 snip     > 50 messages ──> archive to .harness/transcripts/, keep head + marker + tail (30)
 *     L2 micro    old results the model has seen ──> "[Earlier tool result compacted. …]"
 *     L4 summary  still > the limit ──> one summary message (+ the newest batch word for word)
 *   "prompt is too long" from the API ──> compact once, retry once
 *   compact tool / /compact ──> summarise the whole history now
 *
 * Run it:  pnpm --filter s08 start    (no key configured: the offline demo runs)
 *          pnpm --filter s08 demo
 * New here: compact.ts (the pipeline, the summary, the reactive path, the compact tool,
 * /compact) and compact-layers.ts (L1–L3), one line in the list below. The loop is unchanged: compaction plugs into its
 * aroundModelCall and afterBatch seams, for the main agent and for subagents.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { compactMechanism } from "./compact.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { permissionsMechanism } from "./permissions.ts";
import { skillsMechanism } from "./skills.ts";
import { subagentMechanism } from "./subagent.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s08", title: "Context Compact" };

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
  ]);
}

runIfEntry(import.meta.url, main);
