/**
 * Workflows (s16): saved, trusted scripts that run many focused model calls. The model
 * never writes code: it picks a bundled workflow by name and passes `args`. The script
 * orchestrates agent calls with a few primitives, and every finished call is journaled, so
 * a run that was killed or interrupted resumes without redoing what it had finished.
 *
 *   Workflow {name, args, resume_from_run_id?}
 *     ──> the script's meta checked ──> run id (a fresh one reserved by exclusive create)
 *     ──> the run lock (lockfile.ts: a dead holder's lock is reclaimed)
 *     ──> resuming? snapshot, args and journal checked before anything is written
 *     ──> script(primitives): agent · parallel · pipeline · phase · log · workflow
 *           agent(prompt) ──> key = hash(label, prompt, schema)
 *                              in the journal? "cached" : one model call, checked, journaled
 *     ──> output, snapshot, last_run.txt ──> lock released ──> one tool_result
 *
 *   .harness/workflows/<runId>.json           the run: workflow, args, status, usage, progress
 *   .harness/workflows/<runId>.output.json    its result
 *   .harness/workflows/<runId>.journal.jsonl  {"key","value"}, one line per finished call
 *   .harness/workflows/<runId>.lock           {"pid","time"} while it runs
 *   .harness/workflows/last_run.txt           the newest finished run
 *
 * Lifecycle events and progress print as they happen; the model sees only the final result.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import {
  appendLine,
  asObject,
  harnessPath,
  invalidInput,
  isAbortError,
  type ModelClient,
  type Tone,
  type ToolDefinition,
  writeFileAtomic,
} from "shared";
import type { LoopSeams, Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { INTERRUPTED_RESULT } from "./interrupt.ts";
import { LockError, LockFile, processAlive, readLock } from "./lockfile.ts";
import { matchingBracket } from "./memory-extract.ts";
import type { PromptSection } from "./prompt.ts";
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

export interface JsonSchema {
  type?: "object" | "array" | "string" | "boolean" | "number" | "integer";
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
}

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

function defaultLabel(prompt: string): string {
  const points = [...prompt];
  return points.length > LABEL_LENGTH ? `${points.slice(0, LABEL_LENGTH).join("")}...` : prompt;
}

// ---------------------------------------------------------------------------------------
// Structured output

/** Null when `value` fits `schema`, else what is wrong and where (`findings: [0]: …`). */
export function validateJson(value: unknown, schema: JsonSchema | undefined): string | null {
  if (!schema) return null;
  if (schema.enum && !schema.enum.some((option) => option === value))
    return `expected one of ${JSON.stringify(schema.enum)}`;
  switch (schema.type) {
    case "object": {
      const object = asObject(value);
      if (!object) return "expected object";
      for (const key of schema.required ?? [])
        if (!(key in object)) return `missing required key '${key}'`;
      for (const [key, inner] of Object.entries(schema.properties ?? {})) {
        if (!(key in object)) continue;
        const problem = validateJson(object[key], inner);
        if (problem) return `${key}: ${problem}`;
      }
      return null;
    }
    case "array": {
      if (!Array.isArray(value)) return "expected array";
      for (const [index, item] of value.entries()) {
        const problem = validateJson(item, schema.items);
        if (problem) return `[${index}]: ${problem}`;
      }
      return null;
    }
    case "string":
      return typeof value === "string" ? null : "expected string";
    case "boolean":
      return typeof value === "boolean" ? null : "expected boolean";
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "expected number";
    case "integer":
      return Number.isInteger(value) ? null : "expected integer";
    default:
      return null;
  }
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
 * One request per agent call through the harness's client (so s15's retries, fallback and
 * usage line cover it): no tools, max_tokens 2000, scope "workflow".
 */
export function modelRunner(client: ModelClient, model: () => string): AgentRunner {
  return {
    async run(prompt, { schema, signal }) {
      const content =
        schema === null
          ? prompt
          : `${prompt}\n\nReturn only one JSON object matching this schema:\n${canonicalJson(schema)}`;
      const message = await client.create(
        {
          model: model(),
          max_tokens: AGENT_MAX_TOKENS,
          system: AGENT_SYSTEM,
          messages: [{ role: "user", content }],
        },
        { scope: "workflow", signal },
      );
      const text = message.content
        .filter((block): block is Anthropic.TextBlock => block.type === "text")
        .map((block) => block.text)
        .join("");
      const tokens = message.usage.input_tokens + message.usage.output_tokens;
      return { value: schema === null ? text : extractJson(text), tokens };
    },
  };
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

class Semaphore {
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
async function settleAll<T>(work: Array<Promise<T>>): Promise<T[]> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

// ---------------------------------------------------------------------------------------
// The journal and the lock

export interface JournalFile {
  records: Map<string, unknown>;
  /** The last line was cut off by a crash and is ignored. */
  tornTail: boolean;
}

/** A resumed run's journal, checked line by line; any bad line refuses the resume. */
export function loadJournal(file: string, runId: string): JournalFile {
  if (!existsSync(file)) throw new WorkflowInputError(`resume journal not found for ${runId}`);
  const lines = readFileSync(file, "utf8").split("\n");
  // Text after the last newline is a record a crash cut off (every write ends its line).
  const tail = lines.pop() ?? "";
  const records = new Map<string, unknown>();
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    let record: Record<string, unknown> | null = null;
    try {
      record = asObject(JSON.parse(line));
    } catch {
      // reported below
    }
    if (!record || typeof record.key !== "string" || !("value" in record))
      throw new WorkflowInputError(`invalid resume journal record at line ${index + 1}`);
    records.set(record.key, record.value);
  });
  return { records, tornTail: tail.trim() !== "" };
}

// ---------------------------------------------------------------------------------------
// One run

export type RunStatus = "running" | "completed" | "failed";

export interface ProgressEvent {
  type: "workflow_phase" | "workflow_log" | "workflow_agent";
  [field: string]: unknown;
}

export interface TaskState {
  taskId: string;
  taskType: "local_workflow";
  runId: string;
  workflowName: string;
  status: RunStatus;
  usage: { agents: number; tokens: number };
  progress: ProgressEvent[];
}

export interface Snapshot {
  runId: string;
  workflowName: string;
  args: Record<string, unknown>;
  task: TaskState;
}

export interface RunOutcome {
  launched: {
    status: "async_launched";
    taskId: string;
    taskType: "local_workflow";
    runId: string;
    workflowName: string;
  };
  result: unknown;
  task: TaskState;
}

export interface RuntimeOptions {
  /** The workspace; state lives under `.harness/workflows/`. */
  workdir: string;
  registry: Registry;
  runner: AgentRunner;
  /** Where event and progress lines go, as they happen. */
  say: (text: string, tone: Tone) => void;
}

/** What one run shares with a nested workflow: task, journal, runner, budget and cap. */
interface RunShared {
  task: TaskState;
  journal: Map<string, unknown>;
  journalFile: string;
  budget: Budget;
  semaphore: Semaphore;
  executed: { count: number };
  signal: AbortSignal;
}

export class WorkflowRuntime {
  /** Runs of this process that hold their lock now. */
  private readonly active = new Set<string>();
  private readonly options: RuntimeOptions;
  constructor(options: RuntimeOptions) {
    this.options = options;
  }

  /** `.harness/workflows/<runId><suffix>`, the folder made on first use. */
  private file(runId: string, suffix: string): string {
    return harnessPath(this.options.workdir, WORKFLOW_DIR, `${runId}${suffix}`);
  }

  /** `Workflow` as the tool calls it: name, args and resume id checked, then the run. */
  async call(input: unknown, signal: AbortSignal): Promise<RunOutcome> {
    const object = asObject(input) ?? {};
    const { name, args, resume_from_run_id: resume } = object;
    if (typeof name !== "string") throw new WorkflowInputError("workflow name must be a string");
    const script = this.options.registry.get(name);
    if (!script) throw new WorkflowInputError(`unknown workflow '${name}'`);
    if (args !== undefined && args !== null && !asObject(args))
      throw new WorkflowInputError("workflow args must be an object");
    return this.run(script, (args ?? null) as Record<string, unknown> | null, resume, signal);
  }

  async run(
    script: WorkflowScript,
    givenArgs: Record<string, unknown> | null,
    resumeFrom: unknown,
    signal: AbortSignal,
  ): Promise<RunOutcome> {
    const meta = validateMeta(script.meta);
    const resuming = resumeFrom !== undefined && resumeFrom !== null;
    const runId = resuming ? checkRunId(resumeFrom) : this.reserveRunId(meta.name);
    const release = this.lock(runId);
    try {
      const journalFile = this.file(runId, ".journal.jsonl");
      let args: Record<string, unknown>;
      let journal: Map<string, unknown>;
      if (resuming) {
        const prepared = this.prepareResume(runId, meta, givenArgs);
        args = prepared.args;
        journal = prepared.journal.records;
        if (prepared.journal.tornTail)
          this.options.say(
            `[workflow] ${path.basename(journalFile)}: the last line was cut off (a crash mid-write); ignored`,
            "warn",
          );
      } else {
        args = givenArgs ?? {};
        journal = new Map();
        writeFileAtomic(journalFile, "");
      }
      const task: TaskState = {
        taskId: `local_workflow_${runId}`,
        taskType: "local_workflow",
        runId,
        workflowName: meta.name,
        status: "running",
        usage: { agents: 0, tokens: 0 },
        progress: [],
      };
      const launched = {
        status: "async_launched" as const,
        taskId: task.taskId,
        taskType: "local_workflow" as const,
        runId,
        workflowName: meta.name,
      };
      this.event("async_launched", { runId, taskId: task.taskId });
      this.event("task_started", {
        workflow: meta.name,
        phases: meta.phases?.length ? meta.phases.join(",") : "-",
        resume: resuming,
      });
      this.writeSnapshot({ runId, workflowName: meta.name, args, task });
      const budgetArg = args.budget;
      const shared: RunShared = {
        task,
        journal,
        journalFile,
        budget: new Budget(typeof budgetArg === "number" ? budgetArg : null),
        semaphore: new Semaphore(MAX_CONCURRENT),
        executed: { count: 0 },
        signal,
      };
      let result: unknown;
      try {
        result = await script.run(this.primitives(shared, args, 0));
        task.status = "completed";
      } catch (error) {
        task.status = "failed";
        const interrupted = signal.aborted || isAbortError(error);
        result = { error: interrupted ? "interrupted" : (error as Error).message };
      }
      const output = this.file(runId, ".output.json");
      writeFileAtomic(output, `${JSON.stringify(result, null, 2)}\n`);
      this.writeSnapshot({ runId, workflowName: meta.name, args, task });
      writeFileAtomic(this.file("last_run", ".txt"), `${runId}\n`);
      this.event("task_notification", {
        status: task.status,
        agents: task.usage.agents,
        tokens: task.usage.tokens,
        outputFile: path.relative(this.options.workdir, output),
      });
      return { launched, result, task };
    } finally {
      release();
    }
  }

  /** A new id whose snapshot file this call created (so no other run owns it). */
  private reserveRunId(name: string): string {
    for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt++) {
      const runId = `wf_${name}_${randomBytes(8).toString("hex")}`;
      try {
        closeSync(openSync(this.file(runId, ".json"), "wx"));
        return runId;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
    throw new WorkflowInputError("could not allocate a unique workflow runId");
  }

  /** Takes `<runId>.lock` for the whole run (lockfile.ts); a dead holder's lock is reclaimed. */
  private lock(runId: string): () => void {
    const busy = new WorkflowInputError(`workflow run ${runId} is already active`);
    if (this.active.has(runId)) throw busy;
    const lock = new LockFile(this.file(runId, ".lock"), {
      waitMs: 0,
      retryMs: 0,
      tornMs: 0,
      onReclaim: (holder) =>
        this.options.say(
          `[workflow] ${runId}.lock was left by a process that is gone (pid ${holder.pid ?? "unknown"}): reclaimed`,
          "warn",
        ),
    });
    let taken: boolean;
    try {
      taken = lock.tryAcquire();
    } catch (error) {
      if (!(error instanceof LockError)) throw error;
      throw new WorkflowInputError(`${runId}.lock is ${error.message}; remove it`);
    }
    if (!taken) throw busy;
    this.active.add(runId);
    return () => {
      this.active.delete(runId);
      lock.release();
    };
  }

  /** Every check a resume needs, before it writes anything. */
  private prepareResume(
    runId: string,
    meta: WorkflowMeta,
    givenArgs: Record<string, unknown> | null,
  ): { args: Record<string, unknown>; journal: JournalFile } {
    const file = this.file(runId, ".json");
    if (!existsSync(file)) throw new WorkflowInputError(`resume snapshot not found for ${runId}`);
    let snapshot: Record<string, unknown> | null = null;
    try {
      snapshot = asObject(JSON.parse(readFileSync(file, "utf8")));
    } catch {
      // reported below
    }
    if (!snapshot) throw new WorkflowInputError(`invalid resume snapshot for ${runId}`);
    if (snapshot.workflowName !== meta.name)
      throw new WorkflowInputError("resume runId does not match workflow meta");
    const saved = (asObject(snapshot.args) ?? {}) as Record<string, unknown>;
    if (givenArgs !== null && canonicalJson(givenArgs) !== canonicalJson(saved))
      throw new WorkflowInputError("resume args do not match the original run");
    return { args: saved, journal: loadJournal(this.file(runId, ".journal.jsonl"), runId) };
  }

  private writeSnapshot(snapshot: Snapshot): void {
    writeFileAtomic(this.file(snapshot.runId, ".json"), `${JSON.stringify(snapshot, null, 2)}\n`);
  }

  private event(name: string, fields: Record<string, unknown>): void {
    this.options.say(`  event      ${name.padEnd(18)} ${pairs(fields)}`, "dim");
  }

  private progress(task: TaskState, event: ProgressEvent): void {
    task.progress.push(event);
    const { type, ...fields } = event;
    this.options.say(`  progress   ${type.padEnd(16)} ${pairs(fields)}`, "dim");
  }

  private primitives(shared: RunShared, args: Record<string, unknown>, depth: number): Primitives {
    const seenPhases = new Set<string>();
    let current: string | null = null;
    const w: Primitives = {
      args,
      phase: (title) => {
        current = title;
        if (seenPhases.has(title)) return;
        seenPhases.add(title);
        this.progress(shared.task, { type: "workflow_phase", title });
      },
      log: (message) => this.progress(shared.task, { type: "workflow_log", message }),
      agent: (prompt, options = {}) => this.agent(shared, prompt, options, current),
      parallel: (thunks) => settleAll(thunks.map((thunk) => thunk())),
      pipeline: (items, ...stages) =>
        settleAll(
          items.map(async (item, index) => {
            let value: unknown = item;
            for (const stage of stages) value = await stage(value, item, index);
            return value;
          }),
        ),
      workflow: async (name, childArgs = {}) => {
        if (depth >= 1) throw new Error("workflow() nesting is one level only");
        const child = this.options.registry.get(name);
        if (!child) throw new Error(`unknown workflow '${name}'`);
        return child.run(this.primitives(shared, childArgs, depth + 1));
      },
    };
    return w;
  }

  private async agent(
    shared: RunShared,
    prompt: string,
    options: AgentOptions,
    current: string | null,
  ): Promise<unknown> {
    const label = options.label ?? defaultLabel(prompt);
    const schema = options.schema ?? null;
    const phase = options.phase ?? current;
    const key = agentKey(label, prompt, schema);
    if (shared.journal.has(key)) {
      const cached = shared.journal.get(key);
      const problem = validateJson(cached, options.schema);
      if (problem) throw new Error(`cached agent output failed schema validation: ${problem}`);
      this.progress(shared.task, { type: "workflow_agent", label, phase, status: "cached" });
      return cached;
    }
    if (shared.executed.count >= MAX_AGENT_CALLS)
      throw new Error(`agent() cap reached (${MAX_AGENT_CALLS})`);
    shared.executed.count++;
    if (shared.budget.remaining <= 0) throw new Error("token budget exceeded");
    const once = (text: string) =>
      shared.semaphore.with(() =>
        this.options.runner.run(text, { schema, label, signal: shared.signal }),
      );
    let { value, tokens } = await once(prompt);
    let problem = validateJson(value, options.schema);
    if (problem) {
      const again = await once(`${prompt}\n\nReturn valid JSON.`);
      value = again.value;
      tokens += again.tokens;
      problem = validateJson(value, options.schema);
      if (problem) throw new Error(`agent({schema}) invalid output: ${problem}`);
    }
    shared.budget.add(tokens);
    shared.task.usage.agents++;
    shared.task.usage.tokens += tokens;
    appendLine(shared.journalFile, JSON.stringify({ key, value }));
    shared.journal.set(key, value);
    this.progress(shared.task, { type: "workflow_agent", label, phase, status: "done" });
    return value;
  }

  /** `/workflows`: runs newest first; a `running` run nobody holds shows `interrupted`. */
  describeRuns(): string {
    const dir = path.join(this.options.workdir, ".harness", WORKFLOW_DIR);
    const names = existsSync(dir)
      ? readdirSync(dir).filter((n) => n.endsWith(".json") && !n.endsWith(".output.json"))
      : [];
    if (names.length === 0) return "[workflows] no runs yet";
    const rows = names
      .map((name) => ({ name, mtime: statSync(path.join(dir, name)).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime)
      .map(({ name }) => {
        const runId = name.slice(0, -".json".length);
        let snapshot: Snapshot | null = null;
        try {
          snapshot = JSON.parse(readFileSync(path.join(dir, name), "utf8")) as Snapshot;
        } catch {
          return `  ${runId}  (unreadable snapshot)`;
        }
        const task = snapshot.task;
        if (!task) return `  ${runId}  (reserved)`;
        let status: string = task.status;
        if (status === "running" && !this.active.has(runId)) {
          const holder = readLock(path.join(dir, `${runId}.lock`))?.pid ?? null;
          if (holder === null || holder === process.pid || !processAlive(holder))
            status = "interrupted";
        }
        return `  ${runId}  ${snapshot.workflowName}  ${status}  agents=${task.usage.agents} tokens=${task.usage.tokens}`;
      });
    return [
      `[workflows] ${rows.length} run${rows.length === 1 ? "" : "s"}, newest first:`,
      ...rows,
    ].join("\n");
  }
}

function pairs(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" ");
}

// ---------------------------------------------------------------------------------------
// The tool, the prompt section and the mechanism

export function workflowTool(
  runtime: WorkflowRuntime,
  onInterrupt: (runId: string) => void,
): ToolDefinition<Record<string, unknown>> {
  return {
    name: "Workflow",
    aliases: [],
    description: "Run a saved workflow by name. Pass input in args.",
    input_schema: {
      type: "object",
      properties: {
        name: { type: "string" },
        args: { type: "object" },
        resume_from_run_id: { type: "string" },
      },
      required: ["name"],
      additionalProperties: false,
    },
    parse(input) {
      const object = asObject(input);
      if (!object) return invalidInput("Workflow", "input must be an object");
      const extra = Object.keys(object).filter(
        (key) => !["name", "args", "resume_from_run_id"].includes(key),
      );
      if (extra.length > 0)
        return invalidInput("Workflow", `unknown field ${extra.map((k) => `'${k}'`).join(", ")}`);
      if (typeof object.name !== "string") return invalidInput("Workflow", "name must be a string");
      return { ok: true, value: object };
    },
    // Rules name it as Workflow or Workflow(<name>): the name is what a rule's specifier matches.
    target: (input) => ({ kind: "exec", command: String(input.name) }),
    async run(input, context) {
      try {
        const outcome = await runtime.call(input, context.signal);
        if (context.signal.aborted) {
          onInterrupt(outcome.launched.runId);
          context.signal.throwIfAborted();
        }
        return { content: JSON.stringify(outcome) };
      } catch (error) {
        if (error instanceof WorkflowInputError)
          return { content: `Error: ${error.message}`, isError: true };
        throw error;
      }
    },
  };
}

export function workflowsSection(registry: Registry): PromptSection {
  const catalog = [...registry.values()].map(
    ({ meta }) => `- ${meta.name}: ${meta.description}${meta.args ? ` (args: ${meta.args})` : ""}`,
  );
  return {
    id: "workflows",
    text: [
      "Workflows: saved, trusted scripts that run many focused model calls. Call Workflow when " +
        "a request matches one; pass resume_from_run_id to continue an interrupted run.",
      ...catalog,
    ].join("\n"),
  };
}

/**
 * The note an interrupted run leaves: the next model call finds the Workflow call that the
 * interrupt answered with `Interrupted by the user` and adds the run id to resume with.
 */
function resumeNotes(pending: string[]): LoopSeams {
  return {
    beforeModelCall: async (messages) => {
      if (pending.length === 0) return;
      for (const message of messages) {
        if (message.role !== "user" || typeof message.content === "string") continue;
        for (const block of message.content) {
          if (block.type !== "tool_result" || block.content !== INTERRUPTED_RESULT) continue;
          const call = messages
            .flatMap((m) => (typeof m.content === "string" ? [] : m.content))
            .find((b) => b.type === "tool_use" && b.id === block.tool_use_id);
          if (call?.type !== "tool_use" || call.name !== "Workflow") continue;
          const runId = pending.shift();
          if (!runId) return;
          block.content =
            `${INTERRUPTED_RESULT}. Workflow run ${runId} stopped; its finished agent calls are ` +
            `journaled: call Workflow with resume_from_run_id "${runId}" to continue it.`;
        }
      }
    },
  };
}

export function workflowMechanism(
  harness: Pick<Harness, "workdir" | "client" | "model" | "emit" | "printer">,
  registry: Registry = bundledWorkflows(),
): Mechanism {
  const say = (text: string, tone: Tone) =>
    harness.emit({ type: "notice", scope: "main", text, tone });
  const runtime = new WorkflowRuntime({
    workdir: harness.workdir,
    registry,
    runner: modelRunner(harness.client, () => harness.model),
    say,
  });
  const interrupted: string[] = [];
  const tool = workflowTool(runtime, (runId) => {
    interrupted.push(runId);
    say(
      `[workflow] ${runId} interrupted; its journal is kept (resume_from_run_id continues it)`,
      "warn",
    );
  });
  return {
    name: "workflow",
    tools: (role) => (role === "main" ? [tool as ToolDefinition] : []),
    sections: (role) => (role === "main" ? [workflowsSection(registry)] : []),
    loop: (run) => (run.role === "main" ? resumeNotes(interrupted) : null),
    commands: {
      workflows: {
        description: "workflow runs, newest first: run ID, workflow, status, agents, tokens",
        run: async () => {
          harness.printer.line(runtime.describeRuns());
          return undefined;
        },
      },
    },
  };
}
