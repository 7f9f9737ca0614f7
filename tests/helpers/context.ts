import type { ToolMap } from "shared";
import type { RunContext } from "../../chapters/s17-goal/src/contract.ts";

/** The main agent's user turn in `/tmp`: a context every chapter's contract accepts. */
interface BaseContext {
  workdir: string;
  signal: AbortSignal;
  scope: string;
  role: "main";
  turn: "user";
  request: string;
  system: string;
  tools: ToolMap;
}

/**
 * A loop run's context as the seams and tools receive it, for tests that call a seam or a
 * gate directly: the main agent's user turn in `/tmp`, with `overrides` on top. Its type is
 * as narrow as what it holds, so it fits the contract of the chapter under test.
 */
export function runContext<T extends Partial<RunContext> = Record<never, never>>(
  overrides?: T,
): Omit<BaseContext, keyof T> & T {
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
  } as Omit<BaseContext, keyof T> & T;
}
