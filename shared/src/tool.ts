/**
 * The shape of a tool. A chapter's tools are plain objects of this type, kept in an own-key
 * `Map` by name; the loop only ever calls `parse` and then `run`. A tool also says what a
 * call touches (`target`), so the guard, the permission gates and settings rules can judge
 * a tool they have never heard of. See docs/architecture.md, "Tools".
 */
import type Anthropic from "@anthropic-ai/sdk";

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export interface ToolOutput {
  content: string;
  isError?: boolean;
  /** Already reported to the user (a permission denial): the printer skips its preview. */
  quiet?: boolean;
  /**
   * A gate refused the call, as data another mechanism can read without matching the
   * wording: which gate, why, and whether the user's approval would have let it run.
   */
  denied?: { gate: string; reason: string; approvable: boolean };
}

export interface ToolContext {
  /** The configured workspace; every path is relative to it. */
  workdir: string;
  /** Aborted when the user interrupts the turn. */
  signal: AbortSignal;
  /** Who is calling: "main", "sub", a teammate's name. */
  scope: string;
}

/** What one call touches: the path it reads or writes, or the command it runs. */
export interface ToolTarget {
  kind: "read" | "write" | "exec";
  /** The path as the model gave it, relative to the workspace. */
  path?: string;
  /** The shell command the call runs. */
  command?: string;
  /** Every call needs the user's approval, for this reason (s14: a tool from an MCP server). */
  ask?: string;
}

export interface ToolDefinition<Input = unknown> {
  name: string;
  /** Claude Code's names for this tool (`Bash`, `Read` …), used by settings rules and hooks. */
  aliases: string[];
  description: string;
  input_schema: Anthropic.Tool.InputSchema;
  /** The tool's own input check; the error text names the tool, the field and the problem. */
  parse(input: unknown): Parsed<Input>;
  run(input: Input, context: ToolContext): Promise<ToolOutput>;
  /** What a call with this (parsed) input touches; absent or null: nothing a gate checks. */
  target?(input: Input): ToolTarget | null;
}

export type ToolMap = Map<string, ToolDefinition>;

/** Builds the own-key registry the loop dispatches through (no prototype lookups). */
export function toolMap(tools: ToolDefinition[]): ToolMap {
  const map: ToolMap = new Map();
  for (const tool of tools) {
    if (map.has(tool.name)) throw new Error(`duplicate tool name: ${tool.name}`);
    map.set(tool.name, tool);
  }
  return map;
}

/** What the API is sent for each tool. */
export function toolSpecs(tools: ToolMap): Anthropic.Tool[] {
  return [...tools.values()].map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.input_schema,
  }));
}

/** Helpers for `parse`: read a field of an unknown input object with a clear error. */
export function invalidInput(tool: string, problem: string): { ok: false; error: string } {
  return { ok: false, error: `Error: Invalid input for ${tool}: ${problem}` };
}

export function asObject(input: unknown): Record<string, unknown> | null {
  return typeof input === "object" && input !== null && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : null;
}
