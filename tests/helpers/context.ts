import type { ToolMap } from "shared";
import type { RunContext } from "../../chapters/s01-loop/src/contract.ts";

/**
 * A loop run's context as the seams and tools receive it, for tests that call a seam or a
 * gate directly: the main agent's user turn in `/tmp`, with `overrides` on top.
 */
export function runContext(overrides: Partial<RunContext> = {}): RunContext {
  return {
    workdir: "/tmp",
    signal: new AbortController().signal,
    scope: "main",
    role: "main",
    turn: "user",
    request: "",
    system: "",
    tools: new Map() as ToolMap,
    ...overrides,
  };
}
