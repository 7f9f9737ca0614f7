/**
 * The one check before every tool call. In s01 it is a block list of dangerous substrings
 * for any call that runs a command: a teaching device, not a security boundary (`s\udo`
 * walks past it).
 */
import type { ToolOutput } from "shared";
import type { Mechanism, RunContext, ToolCall } from "./contract.ts";

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
export async function guard(call: ToolCall, run: RunContext): Promise<ToolOutput | null> {
  const target = run.tools.get(call.name)?.target?.(call.input);
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
