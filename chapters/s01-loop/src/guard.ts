/**
 * The one check before every tool call (s01 §0.9, DESIGN §7.3). In s01 it is a block list
 * of dangerous substrings for `bash`: a teaching device, not a security boundary
 * (`s\udo` walks past it). s03 replaces this file with the permission pipeline.
 */
import type { ToolContext, ToolOutput } from "shared";
import type { ToolCall } from "./loop.ts";

export const BLOCK_LIST = ["rm -rf /", "sudo", "shutdown", "reboot"];
/** A redirection into /dev/, except the harmless sinks, so `2>/dev/null` still runs. */
const DEVICE_REDIRECT = /> *\/dev\/(?!(?:null|stdout|stderr|tty)(?![\w.-]))/;

/** The block-list entry `command` hits, or null. */
export function blockedEntry(command: string): string | null {
  const entry = BLOCK_LIST.find((item) => command.includes(item));
  if (entry) return entry;
  return DEVICE_REDIRECT.test(command) ? "> /dev/" : null;
}

/** Returns the refusal for a call, or null to let it run. */
export async function guard(call: ToolCall, _context: ToolContext): Promise<ToolOutput | null> {
  if (call.name !== "bash") return null;
  const command = (call.input as { command: string }).command;
  const entry = blockedEntry(command);
  if (entry === null) return null;
  return {
    content: `Error: Dangerous command blocked: '${entry}' is on the block list`,
    isError: true,
  };
}
