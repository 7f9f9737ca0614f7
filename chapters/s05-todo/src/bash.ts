/**
 * The `bash` tool and the one async command runner.
 *
 * Every command runs through the system shell in WORKDIR, in its own process group, with
 * an empty stdin. Its streams are read with a cap, so any amount of output is truncated
 * rather than an error, and a timeout kills the whole group. Whatever else runs a command
 * uses `runCommand` too.
 */
import { spawn } from "node:child_process";
import { defineTool, killGroup, positiveIntVar, trackChild } from "shared";
import type { Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";

/** How long one command may run; `BASH_TIMEOUT_MS` overrides it. */
export const BASH_TIMEOUT_MS = 120_000;
/** Bytes kept per stream; the rest is read and dropped. */
export const STREAM_CAP_BYTES = 1024 * 1024;
/** Characters of output the model gets back. */
export const MAX_OUTPUT_CHARS = 50_000;

export interface RunOptions {
  cwd: string;
  timeoutMs: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Written to the command's stdin, which is then closed; absent means an empty stdin. */
  stdin?: string;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** A spawn failure (the command never ran). */
  error: string | null;
}

export function runCommand(command: string, options: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    const result: RunResult = {
      stdout: "",
      stderr: "",
      exitCode: null,
      signal: null,
      timedOut: false,
      aborted: false,
      error: null,
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn("/bin/sh", ["-c", command], {
        cwd: options.cwd,
        env: options.env ?? process.env,
        detached: true, // its own process group, so a timeout can kill everything it started
        stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      });
    } catch (error) {
      resolve({ ...result, error: (error as Error).message });
      return;
    }
    trackChild(child);
    const out = capped(child.stdout);
    const err = capped(child.stderr);
    if (options.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {}); // the command may exit without reading it
      child.stdin.end(options.stdin);
    }

    const stop = (reason: "timedOut" | "aborted") => {
      result[reason] = true;
      killGroup(child);
      // A grandchild that left the group could hold the pipes open: stop waiting for it.
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, 1000).unref();
    };
    const timer = setTimeout(() => stop("timedOut"), options.timeoutMs);
    const onAbort = () => stop("aborted");
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });

    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      resolve({ ...result, exitCode: code, signal, stdout: out.text(), stderr: err.text() });
    };
    child.on("error", (error) => {
      result.error = error.message;
      finish(null, null);
    });
    child.on("close", finish);
  });
}

/** Collects a stream, keeping the first STREAM_CAP_BYTES, decoding as UTF-8 with U+FFFD. */
function capped(stream: NodeJS.ReadableStream | null) {
  const chunks: Buffer[] = [];
  let kept = 0;
  stream?.on("data", (chunk: Buffer) => {
    if (kept >= STREAM_CAP_BYTES) return;
    const part = chunk.subarray(0, STREAM_CAP_BYTES - kept);
    chunks.push(part);
    kept += part.length;
  });
  stream?.on("error", () => {});
  return { text: () => Buffer.concat(chunks).toString("utf8") };
}

/** The model's view of a run: output, exit status, timeout. */
export function formatRun(
  run: RunResult,
  timeoutMs: number,
): { content: string; isError: boolean } {
  if (run.error !== null) return { content: `Error: ${run.error}`, isError: true };
  if (run.timedOut) {
    return { content: `Error: Timeout (${Math.round(timeoutMs / 1000)}s)`, isError: true };
  }
  const output = limit((run.stdout + run.stderr).trim() || "(no output)");
  if (run.signal) {
    return { content: `Error: command killed by signal ${run.signal}\n${output}`, isError: true };
  }
  if (run.exitCode !== 0) {
    return {
      content: `Error: command exited with status ${run.exitCode}\n${output}`,
      isError: true,
    };
  }
  return { content: output, isError: false };
}

/** The first MAX_OUTPUT_CHARS UTF-16 units, never ending inside a surrogate pair. */
export function limit(text: string, max = MAX_OUTPUT_CHARS): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? max - 1 : max;
  return text.slice(0, end);
}

export function bashTool(options: { timeoutMs: number }) {
  return defineTool({
    name: "bash",
    aliases: ["Bash"],
    description: "Run a shell command in the workspace and return its output.",
    input_schema: {
      type: "object",
      properties: { command: { type: "string", description: "The shell command to run." } },
      required: ["command"],
    },
    async run({ command }, context) {
      const run = await runCommand(command, {
        cwd: context.workdir,
        timeoutMs: options.timeoutMs,
        signal: context.signal,
      });
      return formatRun(run, options.timeoutMs);
    },
    target: ({ command }) => ({ kind: "exec", command }),
    // The same input in Claude Code: { command }.
    claudeCode: { name: "Bash" },
  });
}

/** This mechanism's part of the system prompt. */
export function shellSection(workdir: string) {
  return {
    id: "shell",
    text: `Shell: bash runs one command in ${workdir} and returns its output; run commands rather than guessing.`,
  };
}

/** The shell: `bash` for every agent, and its prompt section. */
export function bashMechanism(harness: Pick<Harness, "env" | "workdir">): Mechanism {
  const timeoutMs = positiveIntVar(harness.env, "BASH_TIMEOUT_MS", BASH_TIMEOUT_MS);
  const tool = bashTool({ timeoutMs });
  return {
    name: "bash",
    tools: () => [tool],
    sections: () => [shellSection(harness.workdir)],
  };
}
