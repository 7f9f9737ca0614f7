/**
 * s02: Tool Use — four file tools join bash, and the loop finds each by name.
 *
 *   reply: tool_use { name, input } ──> tools.get(name) ──┬─ bash        bash.ts
 *                                       (own-key Map)     ├─ read_file   tools.ts
 *                                                         ├─ write_file  tools.ts
 *                                                         ├─ edit_file   tools.ts
 *                                                         ├─ glob        tools.ts
 *                                                         └─ (missing) ─> "Error: Unknown tool …"
 *   each call: checkInput ─> guard (block list; paths must stay in WORKDIR) ─> run
 *
 * Run it:  pnpm --filter s02 start    (no key configured: the offline demo runs)
 *          pnpm --filter s02 demo
 * New here: tools.ts (read_file, write_file, edit_file, glob) and paths.ts (what "inside
 * the workspace" means), one line in the list below.
 * Changed from s01: guard.ts also refuses file paths that leave the workspace (real paths,
 * so `..`, absolute paths and symlinks are caught); it learns a call's path from the
 * tool's `target`, so it names no tool. The loop is unchanged: it already dispatched
 * through the map, so a new tool is one more entry.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { guardMechanism } from "./guard.ts";
import { runHarness } from "./harness.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s02", title: "Tool Use" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    guardMechanism(),
  ]);
}

runIfEntry(import.meta.url, main);
