/**
 * The one check before every tool call. Two refusals, both read from what the call says it
 * touches (its tool's `target`): a block list of dangerous substrings for any command (a
 * teaching device, not a security boundary: `s\udo` walks past it), and the workspace
 * refusal for any path, which compares real paths so `..`, absolute paths and symlinks
 * that leave WORKDIR are all caught.
 */
import type { ToolOutput } from "shared";
import type { Mechanism, RunContext, ToolCall } from "./contract.ts";
import { isInside, resolveInWorkspace } from "./paths.ts";

export const BLOCK_LIST = ["rm -rf /", "sudo", "shutdown", "reboot"];
/** A redirection into /dev/, except the harmless sinks, so `2>/dev/null` still runs. */
const DEVICE_REDIRECT = /> *\/dev\/(?!(?:null|stdout|stderr|tty)(?![\w.-]))/;

/** The block-list entry `command` hits, or null. */
export function blockedEntry(command: string): string | null {
  const entry = BLOCK_LIST.find((item) => command.includes(item));
  if (entry) return entry;
  return DEVICE_REDIRECT.test(command) ? "> /dev/" : null;
}

/** True when `p` (as the model gave it) resolves, symlinks and all, outside `workdir`. */
export function escapesWorkspace(workdir: string, p: string): boolean {
  return !isInside(resolveInWorkspace(workdir, p), workdir);
}

/** Returns the refusal for a call, or null to let it run. */
export async function guard(call: ToolCall, run: RunContext): Promise<ToolOutput | null> {
  const target = run.tools.get(call.name)?.target?.(call.input);
  if (target?.path !== undefined) {
    if (!escapesWorkspace(run.workdir, target.path)) return null;
    return { content: `Error: Path escapes workspace: ${target.path}`, isError: true };
  }
  if (target?.command === undefined) return null;
  const entry = blockedEntry(target.command);
  if (entry === null) return null;
  return {
    content: `Error: Dangerous command blocked: '${entry}' is on the block list`,
    isError: true,
  };
}

/** The guard as a mechanism: one check before every tool call of every run. */
export function guardMechanism(): Mechanism {
  return { name: "guard", loop: () => ({ beforeToolCall: guard }) };
}
