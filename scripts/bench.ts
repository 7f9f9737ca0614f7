/**
 * `pnpm bench`: what the harness itself costs.
 *
 * For each chapter, a scripted session of ROUNDS tool rounds runs in-process through the
 * chapter's real `main` against the fake Messages API. Per round:
 *   wall      = time from one model call's start to the next one's start
 *   http      = the model call's round trip, measured at the client
 *   tool      = time spent running the round's tool calls
 *   overhead  = wall − http − tool  (the loop, logging, printing, JSON)
 * Also: the request body size at a few rounds.
 *
 * A second table runs each chapter as a process, the way a learner does:
 *   pnpm start→prompt / →exit = `pnpm --filter sNN start` from the repository root through the
 *       pinned pnpm, stdin at EOF, a dummy key and a closed base URL: median ms from spawn to
 *       the banner's last line (`Type a request …`, after which the REPL waits for input; on
 *       piped stdin the `sNN >> ` prompt is written only with a line) on stdout, and to the
 *       process's exit (PNPM_START_RUNS runs)
 *   RSS at start = max RSS (MiB) of `node --import tsx/esm src/main.ts`, stdin at EOF (median of
 *       RSS_START_RUNS runs); the preload scripts/bench-rss.mjs reports it at exit
 *   RSS 300 rounds = the same, over a session of SESSION_ROUNDS `bash true` rounds against the fake
 *       Messages API (prompt on stdin, then EOF)
 *   api log / transcript = bytes that session left under <WORKDIR>/.harness/logs/
 *
 * The same sessions give a round table: the client's own ms per `bash true` round (from one
 * answer of the fake API to the next request), median of rounds 1–100, and the first and last
 * 20 rounds to show whether it stays flat; its first row is scripts/bench-floor.ts, a bare
 * loop shaped like the TypeScript port's (the SDK's create and spawnSync, nothing else).
 *
 * From s15 on (prompt caching), a caching table: a session of CACHE_TURNS turns a minute
 * apart on a clock the bench moves, each reading a 3 KiB file, against the fake API's cache
 * (prefix rule, 20-block look-back, minimum length, five-minute lifetime): the cached share
 * of input tokens, the append-only ceiling for the same session, how many system prompts
 * its main calls carried, and its price with caching and without.
 *
 * From s08 on (context compaction), a third table: a long session of
 * LONG_ROUNDS rounds that each read a 10 KiB file, run once at the default compaction limits
 * and once at lowered limits so L4 summaries happen. The bound: the largest main request in
 * rounds 151–300 is at most 10 % above the largest in rounds 1–150. A FAIL sets exit code 1.
 *
 * With no chapter named, last: `pnpm --silent course site --out <tmp>` as a process
 * (SITE_RUNS runs, median ms to exit; every chapter's demo runs inside it), and the site it
 * wrote: pages and bytes.
 */

import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isEntry, type Main } from "shared";
import {
  type MessageRequest,
  offersTools,
  type ReceivedRequest,
  reply,
  type ScriptedAnswer,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { pnpmCommand } from "../tests/helpers/cli.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** How the compaction summary's system prompt starts (compact.ts): marks a summary call. */
const SUMMARY_PROMPT_START = "Summarise the supplied coding-agent conversation";
export const ROUNDS = 200;
/** The banner's last line: the REPL waits for input right after it. */
const READY = "Type a request and press Enter";
const SIZE_AT = [1, 10, 100, 200];

export interface ChapterBench {
  chapter: string;
  overheadMs: number;
  httpMs: number;
  toolMs: number;
  wallMs: number;
  requestBytes: Record<number, number>;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** One `bash true` call per round, then a final answer. */
function benchModel(rounds: number) {
  let calls = 0;
  return (_request: MessageRequest): ScriptedAnswer => {
    calls++;
    if (calls > rounds) return reply(text("Benchmark finished."));
    return reply(text(`Round ${calls}.`), toolUse("bash", { command: "true" }));
  };
}

export async function benchChapter(dir: string, rounds = ROUNDS): Promise<ChapterBench> {
  const { main } = (await import(path.join(ROOT, "chapters", dir, "src", "main.ts"))) as {
    main: Main;
  };
  const server = await startFakeServer({ model: benchModel(rounds) });
  const workdir = realpathSync(mkdtempSync(path.join(os.tmpdir(), `harness-bench-${dir}-`)));
  const calls: Array<{ startedMs: number; endedMs: number }> = [];
  const toolTime = new Map<number, number>(); // call index → tool ms in that round
  const sink = new Writable({ write: (_chunk, _enc, done) => done() });
  try {
    await main({
      argv: [],
      stdin: Readable.from(["run the benchmark\n"]),
      stdout: sink,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "bench-key",
        WORKDIR: workdir,
        NO_COLOR: "1",
      },
      observer: {
        modelCall: (call) => calls.push(call),
        event: (event) => {
          if (event.type !== "tool_result") return;
          const round = calls.length - 1;
          toolTime.set(round, (toolTime.get(round) ?? 0) + event.durationMs);
        },
      },
    });
  } finally {
    await server.close();
  }
  const wall: number[] = [];
  const http: number[] = [];
  const tool: number[] = [];
  const overhead: number[] = [];
  for (let i = 0; i + 1 < calls.length && i < rounds; i++) {
    const w = calls[i + 1]!.startedMs - calls[i]!.startedMs;
    const h = calls[i]!.endedMs - calls[i]!.startedMs;
    const t = toolTime.get(i) ?? 0;
    wall.push(w);
    http.push(h);
    tool.push(t);
    overhead.push(w - h - t);
  }
  const requestBytes: Record<number, number> = {};
  for (const round of SIZE_AT) {
    const request = server.requests[round - 1];
    if (request) requestBytes[round] = Buffer.byteLength(request.rawBody);
  }
  return {
    chapter: dir,
    overheadMs: median(overhead),
    httpMs: median(http),
    toolMs: median(tool),
    wallMs: median(wall),
    requestBytes,
  };
}

export function chapterDirs(): string[] {
  return readdirSync(path.join(ROOT, "chapters"))
    .filter((name) => /^s\d\d-/.test(name))
    .sort();
}

function format(results: ChapterBench[]): string {
  const ms = (n: number) => n.toFixed(2);
  const kb = (n: number | undefined) => (n === undefined ? "-" : (n / 1024).toFixed(1));
  const lines = [
    `Harness overhead per tool round (median of ${ROUNDS} rounds; ms) and request size (KiB)`,
    "",
    "| chapter | overhead | http (client) | tool | round wall | req@1 | req@10 | req@100 | req@200 |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const r of results) {
    lines.push(
      `| ${r.chapter} | ${ms(r.overheadMs)} | ${ms(r.httpMs)} | ${ms(r.toolMs)} | ${ms(r.wallMs)} | ${SIZE_AT.map((n) => kb(r.requestBytes[n])).join(" | ")} |`,
    );
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------
// The chapter as a process: started as a learner starts it, its peak memory, its session log.

/** Runs of `pnpm --filter sNN start` per chapter; the table shows medians. */
const PNPM_START_RUNS = 5;
/** Runs of the bare chapter process at EOF per chapter, for the RSS at start (median). */
const RSS_START_RUNS = 3;
/** Tool rounds of the child-process session whose peak RSS and session log are measured. */
export const SESSION_ROUNDS = 300;
/** Nothing listens there: a chapter that called the model would fail at once, not hang. */
const CLOSED_BASE_URL = "http://127.0.0.1:9";
/** Preload that appends "<pid> <maxRSS KiB>" to $BENCH_RSS_FILE when the process exits. */
const RSS_PRELOAD = path.join(ROOT, "scripts", "bench-rss.mjs");
const PROCESS_TIMEOUT_MS = 120_000;

export interface ProcessBench {
  chapter: string;
  pnpmPromptMs: number;
  pnpmExitMs: number;
  startRssMiB: number;
  sessionRssMiB: number;
  /** Bytes under .harness/logs/ after the session, by kind ("other": any further file). */
  logBytes: { api: number; transcript: number; other: number };
  sessionWallMs: number;
  round: RoundTiming;
}

/** Rounds of a process session whose median is "the" cost of a round. */
export const ROUND_WINDOW = 100;
/** Rounds at each end of a session compared to see whether a round's cost stays flat. */
export const ROUND_ENDS = 20;

export interface RoundTiming {
  /** Median of rounds 1–ROUND_WINDOW, ms. */
  medianMs: number;
  /** Median of the first ROUND_ENDS rounds and of the last ROUND_ENDS rounds, ms. */
  firstMs: number;
  lastMs: number;
}

/**
 * The client's own time per round of a session: from the fake API's answer, fully written,
 * to the next request's arrival. That is the tool, the SDK and the harness's bookkeeping,
 * not the fake API's work. `requests` are the session's main calls in order, one more than
 * its rounds.
 */
export function roundTimes(requests: Array<Pick<ReceivedRequest, "timing">>): RoundTiming {
  const gaps = requests.slice(1).map((next, i) => {
    const answered = requests[i]!.timing.answeredMs;
    if (answered === null) throw new Error(`request ${i + 1} was never answered`);
    return next.timing.receivedMs - answered;
  });
  if (gaps.length === 0) throw new Error("no round: a session needs two requests at least");
  return {
    medianMs: median(gaps.slice(0, ROUND_WINDOW)),
    firstMs: median(gaps.slice(0, ROUND_ENDS)),
    lastMs: median(gaps.slice(-ROUND_ENDS)),
  };
}

interface ProcessRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  pid: number | undefined;
  /** ms from spawn to the first `prompt` on stdout; null when it never appeared. */
  promptMs: number | null;
  /** ms from spawn to the process's exit. */
  exitMs: number;
  stdout: string;
  stderr: string;
}

const chapterId = (dir: string) => dir.split("-")[0]!;

/** The bench's environment minus what a chapter run must not inherit, plus `vars`. */
function childEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(ANTHROPIC_|MODEL_ID$|WORKDIR$|INIT_CWD$|FORCE_COLOR$|BENCH_RSS_FILE$)/.test(key)) {
      delete env[key];
    }
  }
  return { ...env, NO_COLOR: "1", ANTHROPIC_API_KEY: "bench-key", ...vars };
}

/** Spawns `command`, writes `input` (maybe nothing) and closes its stdin at once. */
function runProcess(
  command: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string; prompt?: string },
): Promise<ProcessRun> {
  const [file, ...args] = command;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(file!, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let promptMs: number | null = null;
    let exitMs = Number.NaN;
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (promptMs === null && options.prompt && stdout.includes(options.prompt)) {
        promptMs = performance.now() - started;
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), PROCESS_TIMEOUT_MS);
    child.on("error", reject);
    child.on("exit", () => {
      exitMs = performance.now() - started;
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, pid: child.pid, promptMs, exitMs, stdout, stderr });
    });
    child.stdin.on("error", () => {}); // a child that exits first: EPIPE is no news
    child.stdin.end(options.input ?? "");
  });
}

function processFailure(what: string, run: ProcessRun, problem: string): Error {
  const tail = (text: string) => text.trim().split("\n").slice(-8).join("\n");
  return new Error(
    `${what}: ${problem} (exit ${run.code ?? run.signal})\n` +
      `--- stdout (tail)\n${tail(run.stdout)}\n--- stderr (tail)\n${tail(run.stderr)}`,
  );
}

/** A fresh temp folder holding `work/` (the WORKDIR) and the RSS report file. */
function processTemp(prefix: string): { root: string; workdir: string; rssFile: string } {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  const workdir = path.join(root, "work");
  mkdirSync(workdir);
  return { root, workdir, rssFile: path.join(root, "rss.txt") };
}

/** `pnpm --filter sNN start` from the repository root, stdin at EOF: ms to prompt, to exit. */
async function pnpmStart(dir: string): Promise<{ promptMs: number; exitMs: number }> {
  const id = chapterId(dir);
  const prompt: number[] = [];
  const exit: number[] = [];
  for (let i = 0; i < PNPM_START_RUNS; i++) {
    const temp = processTemp(`harness-pnpm-${dir}-`);
    try {
      const run = await runProcess([...pnpmCommand(), "--filter", id, "start"], {
        cwd: ROOT,
        env: childEnv({ ANTHROPIC_BASE_URL: CLOSED_BASE_URL, WORKDIR: temp.workdir }),
        prompt: READY,
      });
      const what = `pnpm --filter ${id} start`;
      if (run.promptMs === null) throw processFailure(what, run, `no "${READY}" on stdout`);
      if (run.code !== 0) throw processFailure(what, run, "failed at EOF");
      prompt.push(run.promptMs);
      exit.push(run.exitMs);
    } finally {
      rmSync(temp.root, { recursive: true, force: true });
    }
  }
  return { promptMs: median(prompt), exitMs: median(exit) };
}

/** `node --import tsx/esm --import bench-rss.mjs src/main.ts` in the chapter folder; RSS in MiB. */
async function chapterProcess(
  dir: string,
  temp: { workdir: string; rssFile: string },
  vars: Record<string, string>,
  input: string,
): Promise<{ run: ProcessRun; rssMiB: number }> {
  const id = chapterId(dir);
  const run = await runProcess(
    [
      process.execPath,
      "--import",
      "tsx/esm",
      "--import",
      pathToFileURL(RSS_PRELOAD).href,
      "src/main.ts",
    ],
    {
      cwd: path.join(ROOT, "chapters", dir),
      env: childEnv({ WORKDIR: temp.workdir, BENCH_RSS_FILE: temp.rssFile, ...vars }),
      input,
      prompt: READY,
    },
  );
  const what = `${id} as a process`;
  if (run.promptMs === null) throw processFailure(what, run, `no "${READY}" on stdout`);
  if (run.code !== 0) throw processFailure(what, run, "did not exit cleanly");
  const report = existsSync(temp.rssFile) ? readFileSync(temp.rssFile, "utf8") : "";
  const kib = report
    .split("\n")
    .map((line) => line.split(" ").map(Number))
    .find(([pid]) => pid === run.pid)?.[1];
  if (kib === undefined) throw processFailure(what, run, `no RSS report in ${temp.rssFile}`);
  return { run, rssMiB: kib / 1024 };
}

/** Sizes of the files under a session-log folder, by kind (see shared's createSessionLog). */
function logSizes(dir: string): ProcessBench["logBytes"] {
  const sizes = { api: 0, transcript: 0, other: 0 };
  if (!existsSync(dir)) return sizes;
  for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const stat = statSync(path.join(dir, name));
    if (!stat.isFile()) continue;
    const kind = name.endsWith("_api.jsonl")
      ? "api"
      : name.endsWith("_transcript.log")
        ? "transcript"
        : "other";
    sizes[kind] += stat.size;
  }
  return sizes;
}

export async function benchProcess(dir: string, rounds = SESSION_ROUNDS): Promise<ProcessBench> {
  const pnpm = await pnpmStart(dir);

  const startRss: number[] = [];
  for (let i = 0; i < RSS_START_RUNS; i++) {
    const temp = processTemp(`harness-rss-${dir}-`);
    try {
      const { rssMiB } = await chapterProcess(
        dir,
        temp,
        { ANTHROPIC_BASE_URL: CLOSED_BASE_URL },
        "",
      );
      startRss.push(rssMiB);
    } finally {
      rmSync(temp.root, { recursive: true, force: true });
    }
  }

  const server = await startFakeServer({ model: benchModel(rounds) });
  const temp = processTemp(`harness-session-${dir}-`);
  try {
    const { run, rssMiB } = await chapterProcess(
      dir,
      temp,
      { ANTHROPIC_BASE_URL: server.url },
      "run the benchmark\n",
    );
    const what = `${chapterId(dir)} session of ${rounds} rounds`;
    const rejected = server.requests.filter((r) => r.rejected !== null);
    if (rejected.length > 0)
      throw processFailure(what, run, `server refused ${rejected[0]!.rejected}`);
    if (server.requests.length < rounds + 1) {
      throw processFailure(what, run, `${server.requests.length} requests, expected ${rounds + 1}`);
    }
    return {
      chapter: dir,
      pnpmPromptMs: pnpm.promptMs,
      pnpmExitMs: pnpm.exitMs,
      startRssMiB: median(startRss),
      sessionRssMiB: rssMiB,
      logBytes: logSizes(path.join(temp.workdir, ".harness", "logs")),
      sessionWallMs: run.exitMs,
      round: roundTimes(server.requests.filter(isMainRequest).slice(0, rounds + 1)),
    };
  } finally {
    await server.close();
    rmSync(temp.root, { recursive: true, force: true });
  }
}

function formatProcesses(results: ProcessBench[]): string {
  const ms = (n: number) => n.toFixed(0);
  const mib = (n: number) => n.toFixed(1);
  const kib = (n: number) => (n / 1024).toFixed(1);
  const lines = [
    `The chapter as a process: \`pnpm --filter sNN start\` from the repository root, stdin at EOF ` +
      `(median of ${PNPM_START_RUNS} runs; ms to the first prompt and to exit). Max RSS (MiB) of ` +
      `\`node --import tsx/esm src/main.ts\`: at start, stdin at EOF (median of ${RSS_START_RUNS}), and ` +
      `over a session of ${SESSION_ROUNDS} bash rounds against the fake API; that session's log ` +
      "under .harness/logs/ (KiB).",
    "",
    `| chapter | pnpm start→prompt ms | pnpm start→exit ms | RSS at start MiB | RSS ${SESSION_ROUNDS} rounds MiB | api log KiB | transcript KiB |`,
    "|---|--:|--:|--:|--:|--:|--:|",
  ];
  for (const r of results) {
    lines.push(
      `| ${r.chapter} | ${ms(r.pnpmPromptMs)} | ${ms(r.pnpmExitMs)} | ${mib(r.startRssMiB)} | ${mib(r.sessionRssMiB)} | ${kib(r.logBytes.api)} | ${kib(r.logBytes.transcript)} |`,
    );
  }
  const other = results.filter((r) => r.logBytes.other > 0);
  if (other.length > 0) {
    lines.push(
      "",
      `Other files under .harness/logs/: ${other.map((r) => `${r.chapter} ${kib(r.logBytes.other)} KiB`).join(", ")}.`,
    );
  }
  return lines.join("\n");
}

const FLOOR_SCRIPT = path.join(ROOT, "scripts", "bench-floor.ts");

/** scripts/bench-floor.ts over the same session: the round table's first row. */
export async function benchFloor(rounds = SESSION_ROUNDS): Promise<RoundTiming> {
  const server = await startFakeServer({ model: benchModel(rounds) });
  const temp = processTemp("harness-floor-");
  try {
    const run = await runProcess(
      [process.execPath, "--import", "tsx/esm", FLOOR_SCRIPT, temp.workdir],
      {
        cwd: ROOT,
        env: childEnv({ ANTHROPIC_BASE_URL: server.url }),
        input: "run the benchmark\n",
      },
    );
    const what = `the floor loop (${path.relative(ROOT, FLOOR_SCRIPT)})`;
    if (run.code !== 0) throw processFailure(what, run, "did not exit cleanly");
    if (server.requests.length !== rounds + 1) {
      throw processFailure(what, run, `${server.requests.length} requests, expected ${rounds + 1}`);
    }
    return roundTimes(server.requests);
  } finally {
    await server.close();
    rmSync(temp.root, { recursive: true, force: true });
  }
}

export function formatRounds(floor: RoundTiming | null, results: ProcessBench[]): string {
  const ms = (n: number) => n.toFixed(2);
  const row = (name: string, r: RoundTiming) =>
    `| ${name} | ${ms(r.medianMs)} | ${ms(r.firstMs)} | ${ms(r.lastMs)} | ${(r.lastMs / r.firstMs).toFixed(2)} |`;
  return [
    `A tool round as a process: the same ${SESSION_ROUNDS}-round sessions, each round one \`bash true\`. ` +
      "The client's own ms per round, from the fake API's answer to the next request (the tool, " +
      `the SDK and the harness, not the fake API): median of rounds 1–${ROUND_WINDOW}, of the first ` +
      `${ROUND_ENDS} and of the last ${ROUND_ENDS} rounds. The floor is a bare loop shaped like the ` +
      "TypeScript port's (scripts/bench-floor.ts: the SDK's create and spawnSync, no log, no " +
      "streaming, no mechanism).",
    "",
    `| loop | ms per round | rounds 1–${ROUND_ENDS} | last ${ROUND_ENDS} | last / first |`,
    "|---|--:|--:|--:|--:|",
    ...(floor ? [row("floor", floor)] : []),
    ...results.map((r) => row(r.chapter, r.round)),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------
// Long session (s08+): the request size must stay bounded however long the session runs.

export const LONG_ROUNDS = 300;
/** Every round's tool output: a read_file of a file exactly this many bytes long. */
const LONG_OUTPUT_BYTES = 10_240;
const LONG_LINE_BYTES = 64;
/** Files cycled through, so consecutive outputs differ. */
const LONG_FILES = 30;
const LONG_FILE_DIR = "bench-files";
const LONG_SIZE_AT = [1, 50, 100, 150, 200, 250, 300];
/** Compaction arrives in s08; every later chapter inherits it and this bench. */
const LONG_FROM_CHAPTER = 8;
/** The bound: max(rounds 151–300) ≤ max(rounds 1–150) × (1 + slack). */
const LONG_BOUND_SLACK = 0.1;
/**
 * The second run's limits. At the defaults the history settles at four whole 10 KiB results
 * (L2 keeps 3 seen + the newest unseen) and at most 50 messages (L1), a request of about
 * 52–57 KB, so L4's 150 000 is never reached. 55 000 sits inside the band the L1 snip cycle
 * sweeps: a summary fires every ~20 rounds. (40 000, below the four-results floor, would
 * summarise every third round.)
 */
const LOWERED_CONTEXT_LIMIT = 55_000;
const LOWERED_LIMITS: Record<string, string> = {
  L4_COMPACT_CONTEXT_LIMIT: String(LOWERED_CONTEXT_LIMIT),
};

export interface LongSessionRun {
  chapter: string;
  /** "default" or the overrides, e.g. "L4_COMPACT_CONTEXT_LIMIT=55000". */
  limits: string;
  /**
   * Body bytes of main request r at index r − 1: LONG_ROUNDS + 1 of them, the last one
   * carries round 300's result and gets the final answer (counted with rounds 151–300).
   */
  mainBytes: number[];
  /** The L4 summary calls (requests carrying the summariser's system prompt). */
  summaryCalls: number;
  /** Body bytes of every request of the run, summary calls included. */
  totalBytes: number;
  /** How often each layer said it acted (its notice lines). */
  layerNotices: Record<"L1" | "L2" | "L3" | "L4", number>;
  maxFirstHalf: number;
  maxSecondHalf: number;
  pass: boolean;
  wallMs: number;
}

/** Chapters whose folder number is LONG_FROM_CHAPTER or more (`s08-compact`, `s09-…`). */
export function hasLongSession(dir: string): boolean {
  const match = /^s(\d\d)-/.exec(dir);
  return match !== null && Number(match[1]) >= LONG_FROM_CHAPTER;
}

const longFile = (index: number) => `${LONG_FILE_DIR}/file-${String(index).padStart(2, "0")}.txt`;

/** LONG_OUTPUT_BYTES of ASCII: numbered lines, the filler shifted per file and per line. */
export function longFileText(index: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const lines: string[] = [];
  for (let line = 0; lines.length * LONG_LINE_BYTES < LONG_OUTPUT_BYTES; line++) {
    const head = `file ${String(index).padStart(2, "0")} line ${String(line).padStart(3, "0")} `;
    let body = head;
    for (let i = 0; body.length < LONG_LINE_BYTES - 1; i++) {
      body += alphabet[(index * 7 + line + i) % alphabet.length];
    }
    lines.push(`${body}\n`);
  }
  return lines.join("").slice(0, LONG_OUTPUT_BYTES);
}

/**
 * Main calls (they offer tools): read file (n − 1) mod LONG_FILES in round n, then a final
 * answer. The round comes from a counter, never from the history, which L4 rewrites.
 * Summary side calls (no tools): a short summary.
 */
function longSessionModel(rounds: number) {
  let mainCalls = 0;
  let summaries = 0;
  return (request: MessageRequest): ScriptedAnswer => {
    if (!offersTools(request)) {
      summaries++;
      return reply(
        text(
          `Summary ${summaries}: the user asked to run the long-session benchmark. ` +
            `Bench files under ${LONG_FILE_DIR}/ are read one per round; ${mainCalls} rounds ` +
            "so far; nothing was changed; remaining work: keep reading, then answer.",
        ),
      );
    }
    mainCalls++;
    if (mainCalls > rounds) return reply(text("Long session finished."));
    return reply(
      text(`Round ${mainCalls}.`),
      toolUse("read_file", { path: longFile((mainCalls - 1) % LONG_FILES) }),
    );
  };
}

function isMainRequest(request: ReceivedRequest): boolean {
  const body = request.body;
  return (
    typeof body === "object" &&
    body !== null &&
    "tools" in body &&
    Array.isArray(body.tools) &&
    body.tools.length > 0
  );
}

export async function benchLongSession(
  dir: string,
  limits: Record<string, string>,
  rounds = LONG_ROUNDS,
): Promise<LongSessionRun> {
  const { main } = (await import(path.join(ROOT, "chapters", dir, "src", "main.ts"))) as {
    main: Main;
  };
  const workdir = realpathSync(mkdtempSync(path.join(os.tmpdir(), `harness-long-${dir}-`)));
  mkdirSync(path.join(workdir, LONG_FILE_DIR));
  for (let i = 0; i < LONG_FILES; i++) {
    writeFileSync(path.join(workdir, longFile(i)), longFileText(i));
  }
  const server = await startFakeServer({ model: longSessionModel(rounds) });
  const sink = new Writable({ write: (_chunk, _enc, done) => done() });
  const layerNotices = { L1: 0, L2: 0, L3: 0, L4: 0 };
  let toolErrors = 0;
  let outputChars = 0;
  let status: number;
  let wallMs: number;
  const started = performance.now();
  try {
    status = await main({
      argv: [],
      stdin: Readable.from(["run the long-session benchmark\n"]),
      stdout: sink,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "bench-key",
        WORKDIR: workdir,
        NO_COLOR: "1",
        ...limits,
      },
      observer: {
        event: (event) => {
          if (event.type === "tool_result") {
            if (event.isError) toolErrors++;
            outputChars = Math.max(outputChars, event.content.length);
          }
          if (event.type !== "notice") return;
          const layer = /^\[compact (L[1-4])\]/.exec(event.text)?.[1];
          if (layer === "L1" || layer === "L2" || layer === "L3" || layer === "L4")
            layerNotices[layer]++;
        },
      },
    });
    wallMs = performance.now() - started;
  } finally {
    await server.close();
    // ~20 MB of session log, archives and bench files: not worth keeping.
    rmSync(workdir, { recursive: true, force: true });
  }
  const label = Object.entries(limits)
    .map(([name, value]) => `${name}=${value}`)
    .join(" ");
  const problems: string[] = [];
  if (status !== 0) problems.push(`main exited with ${status}`);
  const rejected = server.requests.filter((r) => r.rejected !== null);
  if (rejected.length > 0) problems.push(`server refused ${rejected[0]!.rejected}`);
  if (toolErrors > 0) problems.push(`${toolErrors} tool call(s) failed`);
  if (outputChars < LONG_OUTPUT_BYTES - 1) problems.push(`outputs of only ${outputChars} chars`);
  const mainRequests = server.requests.filter(isMainRequest);
  if (mainRequests.length !== rounds + 1) {
    problems.push(`${mainRequests.length} main requests, expected ${rounds + 1}`);
  }
  if (problems.length > 0) {
    throw new Error(`long session ${dir} (${label || "default"}): ${problems.join("; ")}`);
  }
  const mainBytes = mainRequests.map((r) => Buffer.byteLength(r.rawBody));
  const half = Math.floor(rounds / 2);
  const maxFirstHalf = Math.max(...mainBytes.slice(0, half));
  const maxSecondHalf = Math.max(...mainBytes.slice(half));
  return {
    chapter: dir,
    limits: label || "default",
    mainBytes,
    // Side calls of later chapters (s09's memory extraction) are not summaries.
    summaryCalls: server.requests.filter((r) => r.rawBody.includes(SUMMARY_PROMPT_START)).length,
    totalBytes: server.requests.reduce((sum, r) => sum + Buffer.byteLength(r.rawBody), 0),
    layerNotices,
    maxFirstHalf,
    maxSecondHalf,
    pass: maxSecondHalf <= maxFirstHalf * (1 + LONG_BOUND_SLACK),
    wallMs,
  };
}

function formatLong(runs: LongSessionRun[]): string {
  const kb = (n: number | undefined) => (n === undefined ? "-" : (n / 1024).toFixed(1));
  const slack = `${Math.round(LONG_BOUND_SLACK * 100)} %`;
  const lines = [
    `Long session (chapters s${String(LONG_FROM_CHAPTER).padStart(2, "0")}+): ${LONG_ROUNDS} ` +
      `read_file rounds of ${LONG_OUTPUT_BYTES} bytes each, then a final answer. Request body ` +
      "size (KiB) of main request r; the final request (r = 301) counts with 151–300. " +
      `Bound: max(151–300) ≤ max(1–150) + ${slack}. Summary calls = requests without tools; sent = ` +
      "all request bodies of the run.",
    "",
    `| chapter | limits | summary calls | L1 snips | ${LONG_SIZE_AT.map((n) => `req@${n}`).join(" | ")} | max 1–150 | max 151–300 | ratio | bound | sent (MiB) | wall (s) |`,
    `|---|---|--:|--:|${LONG_SIZE_AT.map(() => "--:").join("|")}|--:|--:|--:|---|--:|--:|`,
  ];
  for (const r of runs) {
    lines.push(
      `| ${r.chapter} | ${r.limits} | ${r.summaryCalls} | ${r.layerNotices.L1} | ${LONG_SIZE_AT.map((n) => kb(r.mainBytes[n - 1])).join(" | ")} | ${kb(r.maxFirstHalf)} | ${kb(r.maxSecondHalf)} | ${(r.maxSecondHalf / r.maxFirstHalf).toFixed(3)} | ${r.pass ? "PASS" : "FAIL"} | ${(r.totalBytes / 1024 / 1024).toFixed(1)} | ${(r.wallMs / 1000).toFixed(2)} |`,
    );
  }
  return lines.join("\n");
}

/** Turns of the caching session: each reads a CACHE_RESULT_BYTES file, a minute apart. */
export const CACHE_TURNS = 50;
const CACHE_RESULT_BYTES = 3 * 1024;
const MINUTE_MS = 60_000;

export interface CacheBench {
  chapter: string;
  calls: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Cache reads over all input tokens (uncached, read and written). */
  share: number;
  /** The share the same session would reach if its history were only appended to. */
  ceiling: number;
  /** The session's price in dollars with caching, and with every input token uncached. */
  dollars: number;
  dollarsUncached: number;
  /** How many different system prompts the session's main calls carried. */
  systemPrompts: number;
}

/** Tokens as the fake API counts them (about 4 characters each). */
const tokens = (chars: number) => Math.ceil(chars / 4);

/**
 * The append-only ceiling of a session's main calls: what share of their input a harness
 * that only ever appended to the history (and never changed its system prompt) would read
 * from the cache. Each call adds the previous reply and the newest user message (its last
 * two messages); an append-only request is the previous one plus that, all of it cached but
 * the addition.
 */
export function appendOnlyCeiling(requests: Array<{ rawBody: string; body: MessageRequest }>) {
  let size = 0;
  let read = 0;
  let all = 0;
  requests.forEach((request, i) => {
    const added =
      i === 0
        ? tokens(request.rawBody.length)
        : tokens(JSON.stringify(request.body.messages.slice(-2)).length);
    read += size;
    size += added;
    all += size;
  });
  return all === 0 ? 0 : read / all;
}

/**
 * A real session's cache, from s15 (prompt caching) on: CACHE_TURNS typed lines, each
 * answered after one read_file round of CACHE_RESULT_BYTES, with a minute between turns on
 * a clock the bench moves (the harness's clock and the fake API's five-minute cache both
 * read it). Reports the cached share of input tokens, the append-only ceiling for the same
 * session, what it cost in dollars with caching and without, and how many system prompts
 * the main calls carried.
 */
export async function benchCaching(dir: string, turns = CACHE_TURNS): Promise<CacheBench> {
  const src = path.join(ROOT, "chapters", dir, "src");
  const { main } = (await import(path.join(src, "main.ts"))) as { main: Main };
  const { dollars } = (await import(path.join(src, "cost.ts"))) as {
    dollars: (
      model: string,
      n: { input: number; output: number; cacheRead: number; cacheWrite: number },
    ) => number | null;
  };
  const realNow = Date.now;
  let offset = 0;
  Date.now = () => realNow() + offset;
  let turn = 0;
  const model = (req: MessageRequest): ScriptedAnswer => {
    if (!offersTools(req)) return reply(text("Summary: the user read one note per turn."));
    const last = req.messages.at(-1)!;
    const result =
      typeof last.content !== "string" && last.content.some((b) => b.type === "tool_result");
    if (!result) {
      turn++;
      return reply(toolUse("read_file", { path: `notes/turn-${turn}.txt` }));
    }
    offset += MINUTE_MS; // the next turn starts a minute later
    return reply(text(`Turn ${turn}: read it.`));
  };
  const server = await startFakeServer({ model, now: () => Date.now() });
  const workdir = realpathSync(mkdtempSync(path.join(os.tmpdir(), `harness-bench-cache-${dir}-`)));
  mkdirSync(path.join(workdir, "notes"));
  for (let i = 1; i <= turns; i++) {
    const line = `Turn ${i} note: the numbers of this turn are ${i * 7919}. `;
    writeFileSync(
      path.join(workdir, "notes", `turn-${i}.txt`),
      line.repeat(Math.ceil(CACHE_RESULT_BYTES / line.length)).slice(0, CACHE_RESULT_BYTES),
    );
  }
  const lines = Array.from({ length: turns }, (_, i) => `turn ${i + 1}: read your note\n`);
  try {
    await main({
      argv: [],
      stdin: Readable.from([lines.join("")]),
      stdout: new Writable({ write: (_chunk, _enc, done) => done() }),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "bench-key",
        WORKDIR: workdir,
        NO_COLOR: "1",
        MEMORY_EXTRACT: "0",
      },
    });
  } finally {
    Date.now = realNow;
    await server.close();
  }
  const logs = path.join(workdir, ".harness", "logs");
  const api = readdirSync(logs).find((file) => file.endsWith("_api.jsonl"))!;
  const totals = { calls: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let modelId = "";
  for (const line of readFileSync(path.join(logs, api), "utf8").split("\n")) {
    if (!line) continue;
    const record = JSON.parse(line) as {
      kind: string;
      data: {
        model?: string;
        usage?: {
          input_tokens: number;
          output_tokens: number;
          cache_read_input_tokens?: number | null;
          cache_creation_input_tokens?: number | null;
        };
      };
    };
    if (record.kind !== "response" || !record.data.usage) continue;
    modelId ||= record.data.model ?? "";
    totals.calls++;
    totals.input += record.data.usage.input_tokens;
    totals.output += record.data.usage.output_tokens;
    totals.cacheRead += record.data.usage.cache_read_input_tokens ?? 0;
    totals.cacheWrite += record.data.usage.cache_creation_input_tokens ?? 0;
  }
  rmSync(workdir, { recursive: true, force: true });
  const mainCalls = server.requests
    .filter((r) => r.body !== undefined && offersTools(r.body as MessageRequest))
    .map((r) => ({ rawBody: r.rawBody, body: r.body as MessageRequest }));
  const all = totals.input + totals.cacheRead + totals.cacheWrite;
  return {
    chapter: dir,
    ...totals,
    share: all === 0 ? 0 : totals.cacheRead / all,
    ceiling: appendOnlyCeiling(mainCalls),
    dollars: dollars(modelId, totals) ?? 0,
    dollarsUncached:
      dollars(modelId, { input: all, output: totals.output, cacheRead: 0, cacheWrite: 0 }) ?? 0,
    systemPrompts: new Set(mainCalls.map((r) => JSON.stringify(r.body.system))).size,
  };
}

function formatCaching(runs: CacheBench[]): string {
  const lines = [
    `Prompt caching over a real session: ${CACHE_TURNS} turns a minute apart, each reading a ` +
      `${CACHE_RESULT_BYTES / 1024} KiB file, against the fake API's cache (prefix rule, ` +
      "20-block look-back, minimum length, five-minute lifetime). Cached share = read / all " +
      "input tokens; ceiling = the same session's share if its history were only appended to.",
    "",
    "| chapter | calls | uncached | cache read | cache write | cached share | ceiling | system prompts | $ cached | $ uncached |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const r of runs) {
    lines.push(
      `| ${r.chapter} | ${r.calls} | ${r.input} | ${r.cacheRead} | ${r.cacheWrite} | ` +
        `${(r.share * 100).toFixed(1)} % | ${(r.ceiling * 100).toFixed(1)} % | ${r.systemPrompts} | ` +
        `${r.dollars.toFixed(3)} | ${r.dollarsUncached.toFixed(3)} |`,
    );
  }
  return lines.join("\n");
}

const SITE_RUNS = 3;

interface SiteBench {
  ms: number[];
  pages: number;
  bytes: number;
  largest: { name: string; bytes: number };
}

/** `pnpm course site` as a learner runs it, into a temporary folder. */
async function benchSite(): Promise<SiteBench> {
  const ms: number[] = [];
  let sizes: Array<{ name: string; bytes: number }> = [];
  for (let i = 0; i < SITE_RUNS; i++) {
    const temp = processTemp("harness-site-");
    const out = path.join(temp.root, "site");
    try {
      const run = await runProcess([...pnpmCommand(), "--silent", "course", "site", "--out", out], {
        cwd: ROOT,
        env: childEnv({}),
      });
      if (run.code !== 0) throw processFailure("pnpm course site", run, "failed");
      ms.push(run.exitMs);
      sizes = readdirSync(out)
        .filter((name) => name.endsWith(".html"))
        .map((name) => ({ name, bytes: statSync(path.join(out, name)).size }));
    } finally {
      rmSync(temp.root, { recursive: true, force: true });
    }
  }
  const largest = sizes.reduce((a, b) => (b.bytes > a.bytes ? b : a), { name: "", bytes: 0 });
  const bytes = sizes.reduce((sum, s) => sum + s.bytes, 0);
  return { ms, pages: sizes.length, bytes, largest };
}

function formatSite(site: SiteBench): string {
  const kib = (bytes: number) => `${Math.round(bytes / 1024)} KiB`;
  return [
    "| `pnpm course site` | median ms to exit (runs) | pages | HTML | largest page |",
    "|---|--:|--:|--:|---|",
    `| 17 demos + every page | ${Math.round(median(site.ms))} (${site.ms.map(Math.round).join(", ")}) | ${site.pages} | ${kib(site.bytes)} | ${site.largest.name}, ${kib(site.largest.bytes)} |`,
  ].join("\n");
}

if (isEntry(import.meta.url)) {
  const wanted = process.argv.slice(2);
  const dirs = chapterDirs().filter(
    (dir) => wanted.length === 0 || wanted.some((w) => dir.startsWith(w)),
  );
  const results: ChapterBench[] = [];
  for (const dir of dirs) {
    process.stderr.write(`bench ${dir} ...\n`);
    results.push(await benchChapter(dir));
  }
  process.stdout.write(`${format(results)}\n`);
  const processes: ProcessBench[] = [];
  for (const dir of dirs) {
    process.stderr.write(`bench ${dir} as a process ...\n`);
    const result = await benchProcess(dir);
    process.stderr.write(
      `  ${SESSION_ROUNDS}-round session as a process: ${(result.sessionWallMs / 1000).toFixed(2)} s\n`,
    );
    processes.push(result);
  }
  if (processes.length > 0) {
    process.stdout.write(`\n${formatProcesses(processes)}\n`);
    process.stderr.write("bench the floor loop as a process ...\n");
    process.stdout.write(`\n${formatRounds(await benchFloor(), processes)}\n`);
  }
  const caching: CacheBench[] = [];
  for (const dir of dirs.filter((d) =>
    existsSync(path.join(ROOT, "chapters", d, "src", "cost.ts")),
  )) {
    process.stderr.write(`bench ${dir} caching session ...\n`);
    caching.push(await benchCaching(dir));
  }
  if (caching.length > 0) process.stdout.write(`\n${formatCaching(caching)}\n`);
  const long: LongSessionRun[] = [];
  for (const dir of dirs.filter(hasLongSession)) {
    for (const limits of [{}, LOWERED_LIMITS]) {
      process.stderr.write(
        `bench ${dir} long session (${Object.keys(limits).length ? "lowered" : "default"} limits) ...\n`,
      );
      long.push(await benchLongSession(dir, limits));
    }
  }
  if (long.length > 0) {
    process.stdout.write(`\n${formatLong(long)}\n`);
    const failed = long.filter((r) => !r.pass);
    for (const r of failed) {
      process.stderr.write(
        `FAIL ${r.chapter} (${r.limits}): max request in rounds 151–300 ${r.maxSecondHalf} B > ` +
          `${r.maxFirstHalf} B + ${Math.round(LONG_BOUND_SLACK * 100)} %\n`,
      );
    }
    if (failed.length > 0) process.exitCode = 1;
  }
  if (wanted.length === 0) {
    process.stderr.write("bench course site ...\n");
    process.stdout.write(`\n${formatSite(await benchSite())}\n`);
  }
}
