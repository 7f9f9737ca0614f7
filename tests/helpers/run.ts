/**
 * Drives a chapter's real `main` in-process: a fresh temporary workspace, the fake
 * Messages API with a scripted model, prompts on a piped stdin, and the printed output
 * captured (colour off). Nothing touches the network or needs a key.
 */
import {
  accessSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  type PassThrough,
  PassThrough as PassThroughStream,
  Readable,
  Writable,
} from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import { type Env, type Main, stripAnsi, type ToolDefinition } from "shared";
import {
  type FakeServer,
  modelView,
  type ReceivedRequest,
  reply,
  type ScriptedError,
  ScriptedModel,
  type ScriptStep,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { attemptsPerCall, type Chapter, importChapter } from "../chapters.ts";
import { endsWithin, killQuietly, waitForPid, within } from "./process.ts";

const made: string[] = [];

/**
 * Where tests make their workspaces: Linux's RAM-backed /dev/shm when it is there, else the
 * system's temp folder. A run makes and removes hundreds of them, each with files, logs and
 * locks, and on this machine's disk their journal writes cost the suite about 3 s of CPU.
 */
export const TEST_TEMP = (() => {
  try {
    accessSync("/dev/shm", constants.W_OK);
    return "/dev/shm";
  } catch {
    return os.tmpdir();
  }
})();

/** Removes the workspaces this test file made (setup.ts calls it after each file). */
export function removeTempWorkspaces(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function tempWorkspace(prefix = "ws"): string {
  const dir = realpathSync(mkdtempSync(path.join(TEST_TEMP, `harness-test-${prefix}-`)));
  made.push(dir);
  return dir;
}

export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(root, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

export class Capture extends Writable {
  chunks: string[] = [];
  isTTY?: boolean;
  private waiters: Array<{ text: string; from: number; resolve: () => void }> = [];
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk.toString());
    this.waiters = this.waiters.filter((w) => {
      if (!this.text.slice(w.from).includes(w.text)) return true;
      w.resolve();
      return false;
    });
    done();
  }
  /** Resolves once `text` appears in the output written after this call. */
  waitFor(text: string): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ text, from: this.text.length, resolve });
    });
  }
  get text(): string {
    return stripAnsi(this.chunks.join(""));
  }
}

export interface RunOptions {
  /** Command-line arguments (`--plugin-dir <path>`); none by default. */
  argv?: string[];
  steps?: ScriptStep[];
  model?: ScriptedModel;
  /** Lines piped in at once (a final newline is added). */
  prompts?: string[];
  /** A stdin the test controls (interactive tests); overrides `prompts`. */
  stdin?: PassThrough & { isTTY?: boolean };
  /** Receives the output stream before main starts (to answer prompts as they appear). */
  onOutput?: (stdout: Capture) => void;
  env?: Env;
  /**
   * Memory extraction (s09+) adds a side call at the end of every turn. Suites about other
   * mechanisms run without it (MEMORY_EXTRACT=0); memory.test.ts turns it on.
   */
  memoryExtraction?: boolean;
  files?: Record<string, string | Buffer>;
  workdir?: string;
  server?: FakeServer;
  /** Receives the handler main registers for Ctrl-C (call it to interrupt, as SIGINT would). */
  onSignal?: (handler: () => void) => void;
  /** Runs this entry instead of the chapter's own (a list of mechanisms a test composes). */
  main?: Main;
  /**
   * Six minutes pass (on Date.now) after every answer, so the prompt cache is always cold:
   * from s15 compaction rewrites sent messages only then, or over budget.
   */
  coldCache?: boolean;
}

/** How far a cold clock moves at each step: past the prompt cache's five minutes. */
const COLD_GAP_MS = 6 * 60_000;
const REAL_NOW = Date.now;
/** Cold clocks in use, and how far they have moved Date.now between them. */
let coldUsers = 0;
let coldSkew = 0;

/**
 * Date.now moved six minutes forward at every `step`, until `restore`: a session on it finds
 * the prompt cache cold before every call. Clocks in use at once share the one skew, and
 * the last to be restored puts Date.now back.
 */
export function coldDateNow(): { step(): void; restore(): void } {
  if (coldUsers++ === 0) Date.now = () => REAL_NOW() + coldSkew;
  let restored = false;
  return {
    step: () => {
      coldSkew += COLD_GAP_MS;
    },
    restore: () => {
      if (restored) return;
      restored = true;
      if (--coldUsers === 0) Date.now = REAL_NOW;
    },
  };
}

/** A clock six minutes later at every reading: a Compactor's cache is always cold on it. */
export function coldClock(): () => number {
  let now = 0;
  return () => (now += COLD_GAP_MS);
}

export interface RunOutcome {
  code: number;
  output: string;
  workdir: string;
  /** Every request the server saw (rejected ones included). */
  received: ReceivedRequest[];
  /**
   * The accepted request bodies, in order, as the model is told them (`modelView`: from s15
   * the dynamic sections' reminders back after the system prompt); `received` has them raw.
   */
  requests: Anthropic.MessageCreateParams[];
  model: ScriptedModel;
}

export async function loadMain(chapter: Chapter): Promise<Main> {
  return (await importChapter<{ main: Main }>(chapter, "main.ts")).main;
}

export async function runChapter(chapter: Chapter, options: RunOptions = {}): Promise<RunOutcome> {
  const main = options.main ?? (await loadMain(chapter));
  const workdir = options.workdir ?? tempWorkspace(chapter.id);
  if (options.files) writeFiles(workdir, options.files);
  const model = options.model ?? new ScriptedModel(options.steps ?? []);
  const cold = options.coldCache ? coldDateNow() : null;
  const answer = (request: Anthropic.MessageCreateParams) => {
    const reply = model.answer(request);
    cold?.step();
    return reply;
  };
  const server = options.server ?? (await startFakeServer({ model: answer }));
  const stdout = new Capture();
  options.onOutput?.(stdout);
  const stdin =
    options.stdin ?? Readable.from([(options.prompts ?? []).map((line) => `${line}\n`).join("")]);
  try {
    const code = await main({
      argv: options.argv ?? [],
      stdin,
      stdout,
      onSignal: options.onSignal,
      env: {
        PATH: process.env.PATH,
        // An empty home of its own: the developer's ~/.claude never reaches a test.
        HOME: tempWorkspace("home"),
        NO_COLOR: "1",
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "test-key",
        WORKDIR: workdir,
        MEMORY_EXTRACT: options.memoryExtraction ? "1" : "0",
        ...options.env,
      },
    });
    return {
      code,
      output: stdout.text,
      workdir,
      received: [...server.requests],
      requests: server.requests
        .filter((r) => r.rejected === null)
        .map((r) => modelView(r.body as Anthropic.MessageCreateParams)),
      model,
    };
  } finally {
    cold?.restore();
    if (!options.server) await server.close();
  }
}

/** A fault's header that has s15's recovery retry after 1 ms instead of its backoff. */
export const RETRY_AT_ONCE = { "retry-after-ms": "1" };

/** True when the last message mentions `text` (from s15 a typed line may join a repaired one). */
export const lastMentions = (text: string) => (request: Anthropic.MessageCreateParams) =>
  JSON.stringify(request.messages.at(-1)).includes(text);

/**
 * `fault` once for every attempt the chapter makes at one call (`attemptsPerCall`), each
 * retried at once (`retry-after-ms: 1`), so the error reaches the caller in every chapter.
 */
export function everyAttempt(chapter: Chapter, fault: ScriptedError): ScriptedError[] {
  const soon = { ...fault, headers: { ...fault.headers, ...RETRY_AT_ONCE } };
  return Array.from({ length: attemptsPerCall(chapter) }, () => soon);
}

/** The tool_result blocks of a request's last message. */
export function lastToolResults(
  request: Anthropic.MessageCreateParams,
): Anthropic.ToolResultBlockParam[] {
  const last = request.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  const blocks: Anthropic.ContentBlockParam[] = last.content;
  return blocks.flatMap((block) => (block.type === "tool_result" ? [block] : []));
}

/** The names of the tools a request offers, in order ([] for a side call). */
export const toolNames = (request: Anthropic.MessageCreateParams): string[] =>
  ((request.tools ?? []) as Anthropic.Tool[]).map((tool) => tool.name);

/** True when the request's last message carries tool results (the model's next round). */
export const afterTools = (request: Anthropic.MessageCreateParams) =>
  lastToolResults(request).length > 0;

/** The main agent's request offers `task` (s06 on); a subagent's never does. */
export const isMain = (request: Anthropic.MessageCreateParams) =>
  toolNames(request).includes("task");

/**
 * One delegation: the main agent asks a subagent to say hi, then answers. The requests are
 * the main agent's first, the child's, and the main agent's last (what each was offered).
 */
export function delegateOnce(): ScriptStep[] {
  return [
    {
      when: (r) => isMain(r) && r.messages.length === 1,
      reply: reply(toolUse("task", { prompt: "Say hi." })),
    },
    { when: (r) => !isMain(r), reply: reply(text("hi")) },
    { when: (r) => isMain(r) && afterTools(r), reply: reply(text("done")) },
  ];
}

/** A task file as s10's store writes it (pretty JSON); `fields` override the defaults. */
export function taskJson(id: string, fields: Record<string, unknown> = {}): string {
  const task = {
    id,
    subject: `subject of ${id}`,
    description: "",
    status: "pending",
    owner: null,
    blockedBy: [],
    priority: 5,
    ...fields,
  };
  return `${JSON.stringify(task, null, 2)}\n`;
}

/** A request from one of s16's workflow agents (no tools, the agents' system prompt). */
export const isWorkflowAgent = (request: Anthropic.MessageCreateParams) =>
  !request.tools?.length && JSON.stringify(request.system ?? "").includes("focused workflow agent");

/**
 * A review-changes agent answered from what it asks: the security audit finds one
 * injection, the other audits nothing, and the verifier confirms it (fenced JSON, as models
 * often reply).
 */
export function reviewAgentAnswer(request: Anthropic.MessageCreateParams) {
  const prompt = String(request.messages[0]?.content);
  if (prompt.startsWith("Review this change context for security"))
    return reply(text('{"findings":[{"title":"injection","severity":"high"}]}'));
  if (prompt.startsWith("Review this change context")) return reply(text('{"findings":[]}'));
  return reply(text('```json\n{"isReal": true, "reason": "seen"}\n```'));
}

/** A request from s17's goal evaluator (no tools, the evaluator's system prompt). */
export const isGoalEvaluator = (request: Anthropic.MessageCreateParams) =>
  !request.tools?.length &&
  JSON.stringify(request.system ?? "").includes("independent completion evaluator");

/** The goal evaluator's answer, as strict JSON. */
export const goalVerdict = (ok: boolean, reason: string) =>
  reply(text(JSON.stringify({ ok, reason, impossible: false })));

/** True when the last user message is this exact text. */
export const userSaid = (line: string) => (request: Anthropic.MessageCreateParams) => {
  const last = request.messages.at(-1);
  return last?.role === "user" && last.content === line;
};

/** The session log files of a run's workspace (the one run that wrote there). */
export function sessionLog(workdir: string): { files: string[]; api: string; transcript: string } {
  const dir = path.join(workdir, ".harness", "logs");
  const files = readdirSync(dir).sort();
  const read = (suffix: string) => {
    const name = files.find((file) => file.endsWith(suffix));
    return name ? readFileSync(path.join(dir, name), "utf8") : "";
  };
  return { files, api: read("_api.jsonl"), transcript: read("_transcript.log") };
}

/** A bash command that starts `sleep 30`, writes its pid to `sleep.pid` and waits for it. */
export const SLEEP_30 = "sleep 30 & echo $! > sleep.pid.tmp && mv sleep.pid.tmp sleep.pid; wait";

/**
 * Runs a chapter whose script starts SLEEP_30, presses Ctrl-C (the `onSignal` handler the
 * chapter registered) once the sleep runs, and waits at most 3 s for `main` to end. Tells
 * whether the sleep was killed; it never outlives the test.
 */
export async function interruptDuringSleep(
  chapter: Chapter,
  options: RunOptions,
): Promise<{ run: RunOutcome; sleepEnded: boolean }> {
  const workdir = options.workdir ?? tempWorkspace(chapter.id);
  let interrupt: (() => void) | undefined;
  const pending = runChapter(chapter, {
    ...options,
    workdir,
    onSignal: (handler) => {
      interrupt = handler;
    },
  });
  const pid = await waitForPid(path.join(workdir, "sleep.pid"));
  try {
    if (!interrupt) throw new Error("the chapter registered no Ctrl-C handler");
    interrupt();
    const run = await within(pending, 3000);
    if (run === "still running") throw new Error("main still running 3 s after Ctrl-C");
    return { run, sleepEnded: await endsWithin(pid) };
  } finally {
    killQuietly(pid);
    await pending;
  }
}

/**
 * The five base tools of a chapter from s02 on, as its mechanisms give them to an agent:
 * `bash` (with `timeoutMs`), then the four file tools.
 */
export async function baseTools(chapter: Chapter, timeoutMs = 5000): Promise<ToolDefinition[]> {
  type Bash = typeof import("../../chapters/s02-tools/src/bash.ts");
  type Tools = typeof import("../../chapters/s02-tools/src/tools.ts");
  const bash = await importChapter<Bash>(chapter, "bash.ts");
  const files = await importChapter<Tools>(chapter, "tools.ts");
  const harness = { env: { BASH_TIMEOUT_MS: String(timeoutMs) }, workdir: "/" };
  return [
    ...(bash.bashMechanism(harness).tools?.("main") ?? []),
    ...(files.filesMechanism(harness).tools?.("main") ?? []),
  ];
}

/** One step of `runTyped`: wait for `after` in the output (if given), then type `line`. */
export interface Typed {
  after?: string;
  /** Then this many milliseconds more before typing. */
  waitMs?: number;
  /** The line to type, or null to end the input (the chapter then exits at EOF). */
  line: string | null;
}

/**
 * Runs the chapter with a stdin the test types into, step by step: each step waits for
 * its text to appear in the output after the previous step, so lines can follow events
 * that come after the typed ones (scheduled turns, team events). The input ends at the
 * last step, or after `limitMs` whatever happened (a script that went wrong still ends).
 */
export async function runTyped(
  chapter: Chapter,
  options: RunOptions & { typing: Typed[]; limitMs?: number },
): Promise<RunOutcome> {
  const stdin = new PassThroughStream();
  const safety = setTimeout(() => stdin.end(), options.limitMs ?? 8000);
  try {
    return await runChapter(chapter, {
      ...options,
      stdin,
      onOutput: (out) => {
        options.onOutput?.(out);
        void (async () => {
          for (const step of options.typing) {
            if (step.after !== undefined) await out.waitFor(step.after);
            if (step.waitMs) await new Promise((resolve) => setTimeout(resolve, step.waitMs));
            if (step.line === null) break;
            stdin.write(`${step.line}\n`);
          }
          stdin.end();
        })();
      },
    });
  } finally {
    clearTimeout(safety);
  }
}
