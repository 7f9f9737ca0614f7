/**
 * The shape of a tool. A chapter's tools are plain objects of this type, kept in an own-key
 * `Map` by name; the loop checks a call's input against the tool's `input_schema`
 * (`checkInput`) and then calls `run`. A tool also says what a call touches (`target`), so
 * the guard, the permission gates and settings rules can judge a tool they have never heard
 * of. See docs/architecture.md, "Tools".
 */
import type Anthropic from "@anthropic-ai/sdk";
import { check, type FromSchema, type ObjectSchema } from "./schema.ts";

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
  /** The JSON Schema the API receives, and what every call's input is checked against. */
  input_schema: ObjectSchema;
  /** Runs with input that passed the schema, absent defaults filled in. */
  run(input: Input, context: ToolContext): Promise<ToolOutput>;
  /** What a call with this (parsed) input touches; absent or null: nothing a gate checks. */
  target?(input: Input): ToolTarget | null;
  /**
   * The same tool in Claude Code, for scripts written for it: its name there, the input as
   * it takes it (its field names, paths absolute; absent: the input as it is), and back
   * (`from`: an input a script wrote in Claude Code's shape, as this tool takes it; absent:
   * the same fields). Absent: a tool Claude Code lacks, which keeps its own name.
   */
  claudeCode?: {
    name: string;
    input?(input: Input, workdir: string): Record<string, unknown>;
    from?(input: Record<string, unknown>): unknown;
  };
}

/**
 * A tool declared once: `Input` is the type `input_schema` describes (`FromSchema`), so the
 * schema the model reads and the input `run` receives are one declaration.
 */
export function defineTool<const S extends ObjectSchema>(
  tool: Omit<ToolDefinition<FromSchema<S>>, "input_schema"> & { input_schema: S },
): ToolDefinition<FromSchema<S>> {
  return tool;
}

/** A call's input checked against its tool's schema; the error names the tool and the field. */
export function checkInput<Input>(tool: ToolDefinition<Input>, input: unknown): Parsed<Input> {
  const checked = check(tool.input_schema, input, { owner: tool.name });
  if (checked.ok) return checked as Parsed<Input>;
  return invalidInput(tool.name, checked.error);
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

/**
 * What the API is sent for each tool. The same map with the same tools gives the same
 * (frozen) list, so what a request repeats from the last one can be told by identity.
 */
export function toolSpecs(tools: ToolMap): Anthropic.Tool[] {
  const known = specsOf.get(tools);
  if (known && sameTools(known.tools, tools)) return known.specs;
  const list = [...tools.values()];
  // Frozen: every caller shares it (the SDK only reads it).
  const specs = Object.freeze(
    list.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.input_schema as Anthropic.Tool.InputSchema,
    })),
  ) as Anthropic.Tool[];
  specsOf.set(tools, { tools: list, specs });
  return specs;
}

const specsOf = new WeakMap<ToolMap, { tools: ToolDefinition[]; specs: Anthropic.Tool[] }>();

function sameTools(list: ToolDefinition[], tools: ToolMap): boolean {
  if (list.length !== tools.size) return false;
  let i = 0;
  for (const tool of tools.values()) if (tool !== list[i++]) return false;
  return true;
}

/** The error a call with bad input gets: it names the tool and the problem. */
export function invalidInput(tool: string, problem: string): { ok: false; error: string } {
  return { ok: false, error: `Error: Invalid input for ${tool}: ${problem}` };
}

export function asObject(input: unknown): Record<string, unknown> | null {
  return typeof input === "object" && input !== null && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : null;
}
