/**
 * The workflow runtime (s16): one run, from its id to its last file. It reserves a fresh
 * run id, takes the run lock (lockfile.ts), checks a resume, hands the script its
 * primitives, answers each `agent()` from the journal or through the runner, writes the
 * snapshot, output and `last_run.txt`, and lists the runs for `/workflows`.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import {
  appendLine,
  asObject,
  harnessPath,
  isAbortError,
  type Tone,
  writeFileAtomic,
} from "shared";
import { LockError, LockFile, processAlive, readLock } from "./lockfile.ts";
import {
  type AgentOptions,
  type AgentRunner,
  agentKey,
  Budget,
  canonicalJson,
  checkOutput,
  checkRunId,
  defaultLabel,
  MAX_AGENT_CALLS,
  MAX_CONCURRENT,
  MAX_ID_ATTEMPTS,
  type Primitives,
  type Registry,
  Semaphore,
  settleAll,
  validateMeta,
  WORKFLOW_DIR,
  WorkflowInputError,
  type WorkflowMeta,
  type WorkflowScript,
} from "./workflow-core.ts";
import {
  type JournalFile,
  loadJournal,
  type ProgressEvent,
  type Snapshot,
  type TaskState,
} from "./workflow-journal.ts";

// ---------------------------------------------------------------------------------------
// One run

/** What the `Workflow` tool passes: its input, as its schema admits it. */
export interface WorkflowCall {
  name: string;
  args?: Record<string, unknown>;
  resume_from_run_id?: string;
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

  /** `Workflow` as the tool calls it (its schema checked the input): the script, then the run. */
  async call(input: WorkflowCall, signal: AbortSignal): Promise<RunOutcome> {
    const { name, args, resume_from_run_id: resume } = input;
    const script = this.options.registry.get(name);
    if (!script) throw new WorkflowInputError(`unknown workflow '${name}'`);
    return this.run(script, args ?? null, resume, signal);
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
      const cached = checkOutput(shared.journal.get(key), options.schema);
      if (!cached.ok)
        throw new Error(`cached agent output failed schema validation: ${cached.error}`);
      this.progress(shared.task, { type: "workflow_agent", label, phase, status: "cached" });
      return cached.value;
    }
    if (shared.executed.count >= MAX_AGENT_CALLS)
      throw new Error(`agent() cap reached (${MAX_AGENT_CALLS})`);
    shared.executed.count++;
    if (shared.budget.remaining <= 0) throw new Error("token budget exceeded");
    const once = (text: string) =>
      shared.semaphore.with(() =>
        this.options.runner.run(text, { schema, label, signal: shared.signal }),
      );
    const first = await once(prompt);
    let tokens = first.tokens;
    let checked = checkOutput(first.value, options.schema);
    if (!checked.ok) {
      const again = await once(`${prompt}\n\nReturn valid JSON.`);
      tokens += again.tokens;
      checked = checkOutput(again.value, options.schema);
      if (!checked.ok) throw new Error(`agent({schema}) invalid output: ${checked.error}`);
    }
    const value = checked.value;
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
