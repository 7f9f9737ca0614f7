/**
 * The session log: every run appends raw records as JSON lines (`<stamp>_<pid>_api.jsonl`)
 * and a readable transcript (`<stamp>_<pid>_transcript.log`) under
 * `<WORKDIR>/.harness/logs/`. Nothing is created until the first write, writes are
 * whole-line appends (safe for several loops in one process), and credentials are
 * scrubbed from every line.
 *
 * Requests are logged by what changed, so the log grows with the session, not with its
 * square: a `request` record names the system prompt and the tools by digest (each text is
 * written once, in a `system` or `tools` record), says how many messages of the previous
 * request of the same scope it keeps, and carries only the messages after those.
 * `readRequests` rebuilds every request exactly from those records.
 */
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import type { LoopEvent } from "./events.ts";
import { harnessPath } from "./state.ts";

/** A request as sent: a streamed one (s15) carries `stream: true`. */
type RequestParams = Anthropic.MessageCreateParams;

export interface SessionLog {
  readonly sessionId: string;
  /** The raw JSON-lines file. */
  readonly apiPath: string;
  readonly transcriptPath: string;
  /** Appends one raw record: model responses, gate decisions, hook outcomes. */
  record(kind: string, data: unknown, scope?: string): void;
  /** Appends a model request as what changed since the previous request of `scope`. */
  request(params: RequestParams, scope?: string): void;
  /** Appends one readable section to the transcript. */
  transcript(title: string, text: string, scope?: string): void;
  /** `text` with every credential the log keeps off the disk replaced (for other files). */
  redact(text: string): string;
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

  // One JSON line; `data` is JSON text already (undefined: the line has no data).
  const line = (kind: string, data: string | undefined, scope: string) => {
    const head = JSON.stringify({ ts: clock().toISOString(), kind, scope });
    append(apiPath, `${data === undefined ? head : `${head.slice(0, -1)},"data":${data}}`}\n`);
  };
  const record = (kind: string, data: unknown, scope = "main") =>
    line(kind, JSON.stringify(data), scope);
  // Each kind's last value, its JSON text and digest: an unchanged prompt is hashed once.
  const lastDigest = new Map<string, { value: unknown; json: string; digest: string }>();
  const written = new Set<string>();
  const previous = new Map<string, Sent[]>();

  return {
    sessionId: randomBytes(8).toString("hex"),
    apiPath,
    transcriptPath,
    record,
    request(params, scope = "main") {
      const { system, tools, messages, ...rest } = params;
      const digestOf = (kind: "system" | "tools", value: unknown) => {
        if (value === undefined) return null;
        const last = lastDigest.get(kind);
        // The same list again (toolSpecs gives one per tool map): nothing to serialise.
        const json = last?.value === value ? last.json : JSON.stringify(value);
        const digest = last?.json === json ? last.digest : digest16(json);
        lastDigest.set(kind, { value, json, digest });
        if (!written.has(`${kind}:${digest}`)) {
          written.add(`${kind}:${digest}`);
          record(kind, { digest, [kind]: value }, scope);
        }
        return digest;
      };
      const before = previous.get(scope) ?? [];
      const sent = messages.map((message, i) => sentAs(message, before[i]));
      let keep = 0;
      while (keep < before.length && keep < sent.length && before[keep]!.json === sent[keep]!.json)
        keep++;
      previous.set(scope, sent);
      const head = JSON.stringify({
        ...rest,
        system: digestOf("system", system),
        tools: digestOf("tools", tools),
        count: messages.length,
        keep,
      });
      // The new messages' JSON is already at hand: spliced in as the record's last field.
      const news = sent.slice(keep).map((entry) => entry.json);
      line("request", `${head.slice(0, -1)},"messages":[${news.join(",")}]}`, scope);
    },
    transcript(title, text, scope = "main") {
      const head = scope === "main" ? title : `${title} [${scope}]`;
      append(transcriptPath, `=== ${head} (${clock().toISOString()})\n${text}\n\n`);
    },
    redact: scrub,
  };
}

/** A log that writes nothing (tests and tools that must not touch the disk). */
export function nullLog(): SessionLog {
  return {
    sessionId: "null",
    apiPath: "",
    transcriptPath: "",
    record() {},
    request() {},
    transcript() {},
    redact: (text) => text,
  };
}

/** A message as the previous request of its scope sent it, with its JSON text. */
interface Sent {
  message: Anthropic.MessageParam;
  content: Anthropic.MessageParam["content"];
  json: string;
}

/**
 * The message's JSON, taken from the previous request when it is the same message with the
 * same content: the harness replaces a message's content rather than editing it in place,
 * so a long history is not serialised again at every request.
 */
function sentAs(message: Anthropic.MessageParam, before: Sent | undefined): Sent {
  if (before?.message === message && before.content === message.content) return before;
  return { message, content: message.content, json: JSON.stringify(message) };
}

function digest16(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

export interface LoggedRequest {
  scope: string;
  ts: string;
  params: RequestParams;
}

/**
 * Every request of a session, rebuilt from the raw log's text (`pnpm course log` prints
 * them). Throws, naming the line, when a record refers to something the log lacks.
 */
export function readRequests(apiLog: string): LoggedRequest[] {
  const texts = new Map<string, unknown>();
  const histories = new Map<string, Anthropic.MessageParam[]>();
  const requests: LoggedRequest[] = [];
  apiLog.split("\n").forEach((line, index) => {
    if (!line.trim()) return;
    const where = `line ${index + 1}`;
    const entry = JSON.parse(line) as { ts: string; kind: string; scope: string; data: never };
    if (entry.kind === "system" || entry.kind === "tools") {
      const data = entry.data as { digest: string } & Record<string, unknown>;
      texts.set(`${entry.kind}:${data.digest}`, data[entry.kind]);
      return;
    }
    if (entry.kind !== "request") return;
    const { system, tools, count, keep, messages, ...rest } = entry.data as {
      system: string | null;
      tools: string | null;
      count: number;
      keep: number;
      messages: Anthropic.MessageParam[];
    } & Record<string, unknown>;
    const before = histories.get(entry.scope) ?? [];
    if (keep > before.length)
      throw new Error(`${where}: keeps ${keep} of ${before.length} messages`);
    const all = [...before.slice(0, keep), ...messages];
    if (all.length !== count)
      throw new Error(`${where}: ${all.length} messages, expected ${count}`);
    histories.set(entry.scope, all);
    const lookup = (kind: string, digest: string | null) => {
      if (digest === null) return {};
      if (!texts.has(`${kind}:${digest}`)) throw new Error(`${where}: no ${kind} ${digest}`);
      return { [kind]: texts.get(`${kind}:${digest}`) };
    };
    const params = {
      ...rest,
      ...lookup("system", system),
      ...lookup("tools", tools),
      messages: all,
    } as unknown as RequestParams;
    requests.push({ scope: entry.scope, ts: entry.ts, params });
  });
  return requests;
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
