/**
 * `pnpm bench`: what the harness itself costs (issue #2, item 9).
 *
 * For each chapter, a scripted session of ROUNDS tool rounds runs in-process through the
 * chapter's real `main` against the fake Messages API. Per round:
 *   wall      = time from one model call's start to the next one's start
 *   http      = the model call's round trip, measured at the client
 *   tool      = time spent running the round's tool calls
 *   overhead  = wall − http − tool  (the loop, logging, printing, JSON)
 * Also: start-up time to the first prompt (the chapter's `start` command as a process),
 * and the request body size at a few rounds.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import {
  isEntry,
  type Main,
  type MessageRequest,
  reply,
  type ScriptedAnswer,
  startFakeServer,
  text,
  toolUse,
} from "shared";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ROUNDS = 200;
const SIZE_AT = [1, 10, 100, 200];
const STARTUP_RUNS = 3;

export interface ChapterBench {
  chapter: string;
  overheadMs: number;
  httpMs: number;
  toolMs: number;
  wallMs: number;
  startupMs: number;
  requestBytes: Record<number, number>;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** One bash call per round, then a final answer. */
function benchModel(rounds: number) {
  let calls = 0;
  return (_request: MessageRequest): ScriptedAnswer => {
    calls++;
    if (calls > rounds) return reply(text("Benchmark finished."));
    return reply(text(`Round ${calls}.`), toolUse("bash", { command: `echo round ${calls}` }));
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
    startupMs: await startupTime(dir),
    requestBytes,
  };
}

/** Wall time from spawning the chapter's start command to its first prompt. */
async function startupTime(dir: string): Promise<number> {
  const chapterDir = path.join(ROOT, "chapters", dir);
  const id = dir.split("-")[0]!;
  const times: number[] = [];
  for (let i = 0; i < STARTUP_RUNS; i++) {
    times.push(
      await new Promise<number>((resolve, reject) => {
        const started = performance.now();
        const child = spawn(path.join(chapterDir, "node_modules", ".bin", "tsx"), ["src/main.ts"], {
          cwd: chapterDir,
          env: {
            ...process.env,
            ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
            ANTHROPIC_API_KEY: "bench-key",
            WORKDIR: os.tmpdir(),
            NO_COLOR: "1",
          },
          stdio: ["pipe", "pipe", "inherit"],
        });
        let seen = "";
        child.stdout.on("data", (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes(`${id} >> `)) {
            resolve(performance.now() - started);
            child.stdin.end("q\n");
          }
        });
        child.on("error", reject);
      }),
    );
  }
  return median(times);
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
    "| chapter | overhead | http (client) | tool | round wall | start-up to prompt | req@1 | req@10 | req@100 | req@200 |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const r of results) {
    lines.push(
      `| ${r.chapter} | ${ms(r.overheadMs)} | ${ms(r.httpMs)} | ${ms(r.toolMs)} | ${ms(r.wallMs)} | ${r.startupMs.toFixed(0)} | ${SIZE_AT.map((n) => kb(r.requestBytes[n])).join(" | ")} |`,
    );
  }
  return lines.join("\n");
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
}
