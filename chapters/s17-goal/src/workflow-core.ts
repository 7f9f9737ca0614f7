/**
 * What a workflow is (s16), and every rule of a run that needs no disk and no model: the
 * limits, the script interface and the bundled registry, the meta check, run ids, agent
 * keys and canonical JSON, the output check, the JSON a reply holds, the token budget, the
 * semaphore and the drain of `parallel` and `pipeline`.
 */
import { createHash } from "node:crypto";
import { asObject, check, type JsonSchema, type Parsed } from "shared";
import { reviewChanges } from "./workflows/review-changes.ts";

/** Agent calls one run may execute (replays from the journal do not count). */
export const MAX_AGENT_CALLS = 1000;
/** Agent calls in flight at once. */
export const MAX_CONCURRENT = 8;
export const AGENT_MAX_TOKENS = 2000;
/** A default label is the prompt's first this many code points. */
export const LABEL_LENGTH = 24;
/** Tries for a fresh run id before giving up. */
export const MAX_ID_ATTEMPTS = 32;
export const WORKFLOW_DIR = "workflows";
export const AGENT_SYSTEM =
  "You are a focused workflow agent. Complete only the step you are given. Do not claim " +
  "access to files, tools or results that are not in the prompt.";

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const RUN_ID = /^wf_[A-Za-z0-9][A-Za-z0-9._-]{0,63}_[0-9a-f]{16}$/;

/** Bad input, a refused resume or a held lock: the tool answers `Error: <message>`. */
export class WorkflowInputError extends Error {}

// ---------------------------------------------------------------------------------------
// What a workflow is

export interface WorkflowMeta {
  name: string;
  description: string;
  phases?: string[];
  /** What `args` it takes, for the catalog in the system prompt. */
  args?: string;
}

export interface AgentOptions {
  schema?: JsonSchema;
  label?: string;
  phase?: string;
}

/** All a script can do: no files, no shell, only its args and these. */
export interface Primitives {
  args: Record<string, unknown>;
  agent(prompt: string, options?: AgentOptions): Promise<unknown>;
  parallel<T>(thunks: Array<() => Promise<T>>): Promise<T[]>;
  pipeline(
    items: unknown[],
    ...stages: Array<(previous: unknown, item: unknown, index: number) => Promise<unknown>>
  ): Promise<unknown[]>;
  phase(title: string): void;
  log(message: string): void;
  workflow(name: string, args?: Record<string, unknown>): Promise<unknown>;
}

export interface WorkflowScript {
  meta: WorkflowMeta;
  run(w: Primitives): Promise<unknown>;
}

export type Registry = Map<string, WorkflowScript>;

/** The chapter's bundled workflows: the only ones there are. */
export function bundledWorkflows(): Registry {
  return new Map([[reviewChanges.meta.name, reviewChanges]]);
}

export function validateMeta(meta: unknown): WorkflowMeta {
  const object = asObject(meta);
  if (!object?.name || !object.description)
    throw new WorkflowInputError("meta requires `name` and `description`");
  if (typeof object.name !== "string" || !NAME.test(object.name))
    throw new WorkflowInputError(`invalid workflow name ${JSON.stringify(object.name)}`);
  if (typeof object.description !== "string")
    throw new WorkflowInputError("meta.description must be a string");
  const phases = object.phases;
  if (
    phases !== undefined &&
    (!Array.isArray(phases) || phases.some((p) => typeof p !== "string" || p === ""))
  )
    throw new WorkflowInputError("meta.phases must be a list of non-empty strings");
  return object as unknown as WorkflowMeta;
}

// ---------------------------------------------------------------------------------------
// Ids, keys and canonical JSON

/** JSON with object keys sorted and no spaces: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      );
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * `agent-` and ten digits: SHA-256 of label, prompt and schema, as a number mod 10^10. It
 * depends on the call's content only, so parallel calls find their records in any order.
 */
export function agentKey(label: string, prompt: string, schema: JsonSchema | null): string {
  const basis = `agent|${label}|${prompt}|${canonicalJson(schema)}`;
  const digest = BigInt(`0x${createHash("sha256").update(basis).digest("hex")}`);
  return `agent-${(digest % 10_000_000_000n).toString().padStart(10, "0")}`;
}

export function checkRunId(id: unknown): string {
  if (typeof id !== "string" || !RUN_ID.test(id))
    throw new WorkflowInputError(`invalid workflow runId ${JSON.stringify(id)}`);
  return id;
}

export function defaultLabel(prompt: string): string {
  const points = [...prompt];
  return points.length > LABEL_LENGTH ? `${points.slice(0, LABEL_LENGTH).join("")}...` : prompt;
}

// ---------------------------------------------------------------------------------------
// Structured output

/**
 * An agent's output checked against the schema its call gave: the value (defaults filled
 * in), or what is wrong and where (`findings[0].severity must be one of …`). It is the check
 * every tool's input passes.
 */
export function checkOutput(value: unknown, schema: JsonSchema | undefined): Parsed<unknown> {
  return schema ? check(schema, value, { root: "output" }) : { ok: true, value };
}

// ---------------------------------------------------------------------------------------
// Runners: the only way a workflow reaches a model

export interface AgentRunner {
  run(
    prompt: string,
    options: { schema: JsonSchema | null; label: string; signal: AbortSignal },
  ): Promise<{ value: unknown; tokens: number }>;
}

/**
 * The JSON in a reply: the whole text (a ``` fence taken off), else the first object that
 * parses from some `{` (braces inside strings skipped), else the text itself, so the schema
 * check fails and the call is tried once more.
 */
export function extractJson(text: string): unknown {
  const unfenced = text
    .trim()
    .replace(/^```[a-zA-Z]*\s*\n?/, "")
    .replace(/\n?```\s*$/, "");
  try {
    return JSON.parse(unfenced);
  } catch {
    // look inside the prose
  }
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    const end = matchingBracket(text, start);
    if (end < 0) continue;
    try {
      return JSON.parse(text.slice(start, end + 1));
    } catch {
      // not this one
    }
  }
  return text;
}

/**
 * Where the JSON array or object that opens at `start` closes (brackets inside strings
 * skipped), or -1.
 */
function matchingBracket(text: string, start: number): number {
  const close = text[start] === "[" ? "]" : "}";
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") {
      depth--;
      if (depth === 0) return c === close ? i : -1;
    }
  }
  return -1;
}

// ---------------------------------------------------------------------------------------
// Limits

export class Budget {
  spent = 0;
  readonly total: number | null;
  constructor(total: number | null) {
    this.total = total;
  }
  get remaining(): number {
    return this.total === null ? Number.POSITIVE_INFINITY : this.total - this.spent;
  }
  add(tokens: number): void {
    if (this.total !== null && this.spent + tokens > this.total)
      throw new Error(`token budget exceeded (${this.spent + tokens} > ${this.total})`);
    this.spent += tokens;
  }
}

export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly size: number;
  constructor(size: number) {
    this.size = size;
  }
  async with<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/**
 * Every branch settles before the first failure is passed on, so finished siblings are
 * journaled and counted and nothing still runs when the run is written down.
 */
export async function settleAll<T>(work: Array<Promise<T>>): Promise<T[]> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
