/**
 * The one check before every tool call (s01 §0.9, s02 §0.5, DESIGN §7.3). Two refusals:
 * a block list of dangerous substrings for `bash` (a teaching device, not a security
 * boundary: `s\udo` walks past it), and the workspace refusal for the file tools, which
 * compares real paths so `..`, absolute paths and symlinks that leave WORKDIR are all
 * caught. s03 replaces this file with the permission pipeline, which asks instead.
 */
import type { ToolContext, ToolOutput } from "shared";
import type { ToolCall } from "./loop.ts";
import { isInside, resolveInWorkspace } from "./tools.ts";

export const BLOCK_LIST = ["rm -rf /", "sudo", "shutdown", "reboot"];
/** A redirection into /dev/, except the harmless sinks, so `2>/dev/null` still runs. */
const DEVICE_REDIRECT = /> *\/dev\/(?!(?:null|stdout|stderr|tty)(?![\w.-]))/;

/** The tools whose `path` must stay inside the workspace. */
export const PATH_TOOLS = new Set(["read_file", "write_file", "edit_file"]);

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
export async function guard(call: ToolCall, context: ToolContext): Promise<ToolOutput | null> {
  if (PATH_TOOLS.has(call.name)) {
    const target = (call.input as { path: string }).path;
    if (!escapesWorkspace(context.workdir, target)) return null;
    return { content: `Error: Path escapes workspace: ${target}`, isError: true };
  }
  if (call.name !== "bash") return null;
  const command = (call.input as { command: string }).command;
  const entry = blockedEntry(command);
  if (entry === null) return null;
  return {
    content: `Error: Dangerous command blocked: '${entry}' is on the block list`,
    isError: true,
  };
}
