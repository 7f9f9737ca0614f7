/**
 * The session log (DESIGN §3, §7.8): every run appends raw records as JSON lines
 * (`<stamp>_<pid>_api.jsonl`) and a readable transcript (`<stamp>_<pid>_transcript.log`)
 * under `<WORKDIR>/.harness/logs/`. Nothing is created until the first write, writes are
 * whole-line appends (safe for several loops in one process), and credentials are
 * scrubbed from every line.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import path from "node:path";
import type { LoopEvent } from "./events.ts";
import { harnessPath } from "./state.ts";

export interface SessionLog {
  readonly sessionId: string;
  /** The raw JSON-lines file (what hook scripts get as `transcript_path`). */
  readonly apiPath: string;
  readonly transcriptPath: string;
  /** Appends one raw record: model requests and responses, gate decisions, hook outcomes. */
  record(kind: string, data: unknown, scope?: string): void;
  /** Appends one readable section to the transcript. */
  transcript(title: string, text: string, scope?: string): void;
}

export interface SessionLogOptions {
  workdir: string;
  /** Values that must never reach the disk (API key, auth token). */
  secrets?: Array<string | null | undefined>;
  clock?: () => Date;
  pid?: number;
}

/** `2026-11-30T07-15-02-123`, local time, sortable. */
export function logStamp(date: Date): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}-${pad(date.getMinutes())}-${pad(date.getSeconds())}` +
    `-${pad(date.getMilliseconds(), 3)}`
  );
}

export function createSessionLog(options: SessionLogOptions): SessionLog {
  const clock = options.clock ?? (() => new Date());
  const base = `${logStamp(clock())}_${options.pid ?? process.pid}`;
  const dir = path.join(options.workdir, ".harness", "logs");
  const apiPath = path.join(dir, `${base}_api.jsonl`);
  const transcriptPath = path.join(dir, `${base}_transcript.log`);
  const secrets = (options.secrets ?? []).filter((s): s is string => !!s && s.length >= 4);
  const scrub = (text: string) =>
    secrets.reduce((acc, secret) => acc.split(secret).join("[redacted]"), text);
  let ready = false;
  const append = (file: string, text: string) => {
    if (!ready) {
      harnessPath(options.workdir, "logs", "x");
      ready = true;
    }
    appendFileSync(file, scrub(text));
  };

  return {
    sessionId: randomBytes(8).toString("hex"),
    apiPath,
    transcriptPath,
    record(kind, data, scope = "main") {
      const line = JSON.stringify({ ts: clock().toISOString(), kind, scope, data });
      append(apiPath, `${line}\n`);
    },
    transcript(title, text, scope = "main") {
      const head = scope === "main" ? title : `${title} [${scope}]`;
      append(transcriptPath, `=== ${head} (${clock().toISOString()})\n${text}\n\n`);
    },
  };
}

/** A log that writes nothing (tests and tools that must not touch the disk). */
export function nullLog(): SessionLog {
  return {
    sessionId: "null",
    apiPath: "",
    transcriptPath: "",
    record() {},
    transcript() {},
  };
}

/** Writes loop events into the readable transcript (the raw log gets requests and replies). */
export function transcriptSink(log: SessionLog): (event: LoopEvent) => void {
  return (event) => {
    switch (event.type) {
      case "text":
        return log.transcript("ASSISTANT (with tool calls)", event.text, event.scope);
      case "tool_call":
        return log.transcript(`TOOL CALL ${event.name}`, JSON.stringify(event.input), event.scope);
      case "tool_result":
        return log.transcript(
          `TOOL RESULT ${event.name}${event.isError ? " (error)" : ""}`,
          event.content,
          event.scope,
        );
      case "notice":
        return log.transcript("NOTICE", event.text, event.scope);
      default:
        return;
    }
  };
}
