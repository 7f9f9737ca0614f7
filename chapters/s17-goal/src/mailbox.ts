/**
 * Mailboxes (s13): how the lead and its teammates talk. Nobody shares a message list; each
 * agent has one inbox file, and the runtime (not the model) reads it and hands its
 * messages to the agent as text.
 *
 *   .harness/mailboxes/<run>/alice.jsonl   one JSON object per line:
 *     {"from","to","content","type","ts","metadata":{"request_id"…}}
 *
 *   send  = append one whole line in one write (readers never see half a message)
 *   read  = rename the file to a private name, read it, delete it: a message sent while
 *           the read runs lands in a new file and waits for the next read
 *
 * `<run>` is this session's log stamp: teammates live only in this process, so a restarted
 * harness never delivers a dead run's messages. The folder appears with the first message.
 * A line that is not a whole message (a torn write, a hand edit) is never dropped: it is
 * kept in `<name>.rejected.jsonl` beside the inbox and reported with its file and line.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { harnessPath, type SessionLog, type Tone } from "shared";

/** An inbox name: 1-64 letters, digits, underscores or dashes (so no path can escape). */
export const MAILBOX_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const MESSAGE_TYPES = [
  "message",
  "result",
  "idle_notification",
  "error",
  "permission_denied",
  "shutdown_request",
  "shutdown_response",
  "plan_request",
  "plan_approval_request",
  "plan_approval_response",
] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

export interface TeamMessage {
  from: string;
  to: string;
  content: string;
  type: MessageType;
  /** Seconds since the epoch. */
  ts: number;
  metadata: Record<string, unknown>;
}

export interface MailboxOptions {
  workdir: string;
  /** This run's folder name under `.harness/mailboxes/`. */
  run: string;
  /** Prints one runtime line (`[bus] …`, a rejected line). */
  say(text: string, tone: Tone): void;
}

/** The folder name of this run: the session log's `<stamp>_<pid>`. */
export function runName(log: SessionLog): string {
  const base = path.basename(log.apiPath).replace(/_api\.jsonl$/, "");
  return base || `run_${process.pid}`;
}

export class Mailbox {
  readonly dir: string;
  private readonly options: MailboxOptions;
  private readonly listeners = new Set<(message: TeamMessage) => void>();

  constructor(options: MailboxOptions) {
    this.options = options;
    this.dir = path.join(options.workdir, ".harness", "mailboxes", options.run);
  }

  /** The inbox file of `name` (the name checked first). */
  inboxOf(name: string): string {
    if (!MAILBOX_NAME.test(name)) throw new Error(`Invalid mailbox recipient: ${name}`);
    return path.join(this.dir, `${name}.jsonl`);
  }

  /** Appends one message to `to`'s inbox, then wakes everyone waiting for mail. */
  send(
    from: string,
    to: string,
    content: string,
    type: MessageType = "message",
    metadata: Record<string, unknown> = {},
  ): TeamMessage {
    const file = this.inboxOf(to);
    const message: TeamMessage = { from, to, content, type, ts: Date.now() / 1000, metadata };
    harnessPath(this.options.workdir, "mailboxes", this.options.run, `${to}.jsonl`);
    appendFileSync(file, `${JSON.stringify(message)}\n`);
    const short = content.length > 50 ? `${content.slice(0, 50)}…` : content;
    this.options.say(`  [bus] ${from} -> ${to}: (${type}) ${short.replaceAll("\n", " ")}`, "dim");
    for (const listener of this.listeners) listener(message);
    return message;
  }

  /** True when `name` has mail; reads nothing. */
  peek(name: string): boolean {
    try {
      return statSync(this.inboxOf(name)).size > 0;
    } catch {
      return false;
    }
  }

  /** Takes every message of `name`'s inbox, in the order they were sent. */
  read(name: string): TeamMessage[] {
    const file = this.inboxOf(name);
    const taken = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.reading`;
    try {
      renameSync(file, taken);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const text = readFileSync(taken, "utf8");
    const messages: TeamMessage[] = [];
    const rejected: string[] = [];
    text.split("\n").forEach((line, index) => {
      if (!line.trim()) return;
      const message = parseMessage(line);
      if (message) messages.push(message);
      else {
        rejected.push(line);
        this.options.say(
          `  [bus] ${this.relative(file)} line ${index + 1} is not a whole message; kept in ${this.relative(this.rejectedOf(name))}`,
          "warn",
        );
      }
    });
    if (rejected.length > 0) appendFileSync(this.rejectedOf(name), `${rejected.join("\n")}\n`);
    rmSync(taken, { force: true });
    return messages;
  }

  /**
   * The messages of `name`: at once when there are some, else after the next send (to
   * anyone), else [] after `timeoutMs`. The wait never keeps the process alive.
   */
  async wait(name: string, timeoutMs: number, signal?: AbortSignal): Promise<TeamMessage[]> {
    const now = this.read(name);
    if (now.length > 0 || signal?.aborted) return now;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.listeners.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.listeners.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
    return signal?.aborted ? [] : this.read(name);
  }

  /** Calls `listener` after every send (the lead's event source, for the session). */
  onSend(listener: (message: TeamMessage) => void): void {
    this.listeners.add(listener);
  }

  private rejectedOf(name: string): string {
    return path.join(this.dir, `${name}.rejected.jsonl`);
  }

  private relative(file: string): string {
    return path.relative(this.options.workdir, file).split(path.sep).join("/");
  }
}

/** One line as a message, or null when it is not a whole one. */
function parseMessage(line: string): TeamMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const m = value as Record<string, unknown>;
  const strings = ["from", "to", "content"].every((key) => typeof m[key] === "string");
  if (!strings || !MESSAGE_TYPES.includes(m.type as MessageType)) return null;
  const metadata =
    typeof m.metadata === "object" && m.metadata !== null && !Array.isArray(m.metadata)
      ? (m.metadata as Record<string, unknown>)
      : {};
  return {
    from: m.from as string,
    to: m.to as string,
    content: m.content as string,
    type: m.type as MessageType,
    ts: typeof m.ts === "number" ? m.ts : 0,
    metadata,
  };
}
