/**
 * The conversation as Claude Code writes it, for hooks written for Claude Code: one JSON
 * line per message of the main agent, appended as the conversation goes, in
 * `.harness/logs/<session id>.jsonl`.
 *
 *   {"type":"assistant","message":{"role":"assistant","content":[…]},"uuid":"…",
 *    "parentUuid":"…","sessionId":"…","timestamp":"…","cwd":"…"}
 *
 * Command hooks get its path as `transcript_path`, so a Stop hook that looks for the last
 * line with `"role":"assistant"` reads the answer it is judging, as it would in Claude Code.
 */
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync } from "node:fs";
import type Anthropic from "@anthropic-ai/sdk";
import { harnessPath, type SessionLog } from "shared";

export class ClaudeTranscript {
  private parent: string | null = null;
  private file: string | null = null;
  private readonly options: { workdir: string; log: SessionLog };

  constructor(options: { workdir: string; log: SessionLog }) {
    this.options = options;
  }

  /** Appends one message of the main agent. */
  add(message: Anthropic.MessageParam): void {
    const file = this.path();
    if (file === null) return;
    const uuid = randomUUID();
    const line = {
      type: message.role,
      message: { role: message.role, content: message.content },
      uuid,
      parentUuid: this.parent,
      sessionId: this.options.log.sessionId,
      timestamp: new Date().toISOString(),
      cwd: this.options.workdir,
    };
    appendFileSync(file, `${this.options.log.redact(JSON.stringify(line))}\n`);
    this.parent = uuid;
  }

  /** The file, created empty when nothing has been said yet (a hook can always open it). */
  ensure(): string {
    const file = this.path();
    if (file === null) return "";
    if (!existsSync(file)) appendFileSync(file, "");
    return file;
  }

  /** Null for a log that writes nothing (tests, tools): no transcript either. */
  private path(): string | null {
    if (!this.options.log.apiPath) return null;
    this.file ??= harnessPath(this.options.workdir, "logs", `${this.options.log.sessionId}.jsonl`);
    return this.file;
  }
}
