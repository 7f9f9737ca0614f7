/**
 * Command hooks: the hooks a project declares in `.claude/settings*.json`, in Claude Code's
 * shape, run as shell commands.
 *
 *   { "hooks": { "<Event>": [ { "matcher": "Bash",
 *                               "hooks": [ { "type": "command", "command": "…", "timeout": 30 } ] } ] } }
 *
 * A hook gets one JSON object on stdin (session, transcript path, cwd, the event and its
 * fields) and answers with its exit code and output: 0 passes (unless its stdout is JSON
 * that blocks), 2 blocks with stderr as the reason, anything else is reported and ignored.
 * hooks.ts decides what a block means for each event.
 */
import type { SessionLog, Tone } from "shared";
import { runCommand } from "./bash.ts";
import type { SettingsFile } from "./settings.ts";

/** Seconds a command hook may run when its settings give no `timeout`. */
export const DEFAULT_HOOK_TIMEOUT_S = 60;
/** Fields of Claude Code's hooks this harness does not follow: a hook that has one is skipped. */
const UNSUPPORTED_FIELDS = ["if", "async", "asyncRewake"];
/** Events command hooks may name, Claude Code's: `SubagentStop` fires for a scope other than main. */
export const COMMAND_EVENTS = new Set([
  "UserPromptSubmit",
  "PreToolUse",
  "PostToolUse",
  "Stop",
  "SubagentStop",
]);

export interface CommandHook {
  event: string;
  /** Tool-name regex (tool events), or null for every tool. */
  matcher: string | null;
  command: string;
  timeoutS: number;
  /** The settings file it came from. */
  file: string;
}

/** What a command hook said: a block reason, or context to add (UserPromptSubmit). */
export interface CommandOutcome {
  block: string | null;
  context?: string;
  /** PreToolUse's `permissionDecision` "allow" or "ask", with its reason (for the user). */
  decision?: { decision: "allow" | "ask"; reason?: string };
  /** PreToolUse's `updatedInput`: the whole input to run instead, in Claude Code's shape. */
  input?: Record<string, unknown>;
  /**
   * `continue: false`: the hook ends what is under way (a prompt, a Stop continuation).
   * Its `stopReason` is for the user, never the model.
   */
  stop?: string;
}

export interface CommandHookRun {
  workdir: string;
  scope: string;
  signal: AbortSignal;
  log: SessionLog;
  /** The conversation in Claude Code's shape (transcript.ts), handed to the hook. */
  transcriptPath: string;
  /** The environment the hook runs with (CLAUDE_PROJECT_DIR is added). */
  env: NodeJS.ProcessEnv;
  /** Prints one line with the scope's prefix. */
  say(text: string, tone: Tone): void;
}

/**
 * Runs one command hook: JSON on stdin, then Claude Code's rules. Exit 0 passes unless
 * stdout is JSON that blocks; exit 2 blocks with stderr; other codes are reported and
 * ignored; a timeout kills the hook's process group and counts as passed.
 */
export async function runCommandHook(
  hook: CommandHook,
  fields: Record<string, unknown>,
  run: CommandHookRun,
): Promise<CommandOutcome> {
  const event = hook.event;
  const input = {
    session_id: run.log.sessionId,
    transcript_path: run.transcriptPath,
    cwd: run.workdir,
    // Claude Code's modes; this harness asks for every call the rules do not settle.
    permission_mode: "default",
    hook_event_name: event,
    ...fields,
  };
  const result = await runCommand(hook.command, {
    cwd: run.workdir,
    timeoutMs: hook.timeoutS * 1000,
    signal: run.signal,
    stdin: JSON.stringify(input),
    env: { ...run.env, CLAUDE_PROJECT_DIR: run.workdir },
  });
  const record = (outcome: string, detail?: string) =>
    run.log.record("hook", { event, command: hook.command, outcome, detail }, run.scope);
  if (result.timedOut) {
    run.say(`[hook] ${hook.command} timed out after ${hook.timeoutS}s`, "warn");
    record("timeout");
    return { block: null };
  }
  if (result.error !== null || (result.exitCode !== 0 && result.exitCode !== 2)) {
    const why = result.error ?? `exit status ${result.exitCode ?? result.signal}`;
    const stderr = result.stderr.trim();
    run.say(
      `[hook] ${hook.command} failed (${why})${stderr ? `: ${stderr}` : ""}; ignored`,
      "warn",
    );
    record("failed", why);
    return { block: null };
  }
  const verb = event.endsWith("Stop") ? "asks to continue" : "blocked";
  const blocked = (reason: string): CommandOutcome => {
    run.say(`[hook] ${event} (${hook.command}) ${verb}: ${reason}`, "warn");
    record("block", reason);
    return { block: reason };
  };
  if (result.exitCode === 2)
    return blocked(result.stderr.trim() || `blocked by hook ${hook.command}`);

  const stdout = result.stdout.trim();
  if (!stdout.startsWith("{")) {
    record("pass");
    return {
      block: null,
      ...(stdout && event === "UserPromptSubmit" ? { context: stdout } : {}),
    };
  }
  let reply: Record<string, unknown>;
  try {
    reply = JSON.parse(stdout) as Record<string, unknown>;
  } catch {
    run.say(`[hook] ${hook.command}: invalid hook output (not JSON); ignored`, "warn");
    record("invalid output", stdout.slice(0, 200));
    return { block: null };
  }
  // For the user, whatever else the hook says.
  if (typeof reply.systemMessage === "string" && reply.systemMessage.trim()) {
    run.say(`[hook] ${reply.systemMessage.trim()}`, "warn");
  }
  if (reply.continue === false) {
    const reason =
      typeof reply.stopReason === "string" && reply.stopReason.trim()
        ? reply.stopReason.trim()
        : `stopped by hook ${hook.command}`;
    record("stop", reason);
    return { block: null, stop: reason };
  }
  const specific = (reply.hookSpecificOutput ?? {}) as Record<string, unknown>;
  if (reply.decision === "block") {
    return blocked(String(reply.reason ?? `blocked by hook ${hook.command}`));
  }
  const decision = specific.permissionDecision;
  const reason =
    typeof specific.permissionDecisionReason === "string" && specific.permissionDecisionReason
      ? specific.permissionDecisionReason
      : undefined;
  if (decision === "deny") return blocked(reason ?? `blocked by hook ${hook.command}`);
  if (decision !== undefined && decision !== "allow" && decision !== "ask") {
    run.say(
      `[hook] ${hook.command}: permissionDecision ${JSON.stringify(decision)} is not allow, deny or ask; ignored`,
      "warn",
    );
  }
  const updated = specific.updatedInput;
  if (updated !== undefined && !isObject(updated)) {
    run.say(`[hook] ${hook.command}: updatedInput must be an object; ignored`, "warn");
  }
  record(decision === "allow" || decision === "ask" ? decision : "pass", reason);
  const extra = specific.additionalContext;
  return {
    block: null,
    ...(typeof extra === "string" && extra ? { context: extra } : {}),
    ...(decision === "allow" || decision === "ask" ? { decision: { decision, reason } } : {}),
    ...(isObject(updated) ? { input: updated } : {}),
  };
}

/**
 * Reads the `hooks` sections of the settings files. Problems are reported with the file;
 * events and hook types this chapter lacks are reported once and skipped.
 */
export function parseCommandHooks(files: SettingsFile[]): {
  hooks: CommandHook[];
  problems: string[];
} {
  const hooks: CommandHook[] = [];
  const problems: string[] = [];
  for (const file of files) {
    if (file.hooks === undefined) continue;
    if (!isObject(file.hooks)) {
      problems.push(`${file.path}: "hooks" must be an object; no hooks from it`);
      continue;
    }
    for (const [event, entries] of Object.entries(file.hooks)) {
      if (!COMMAND_EVENTS.has(event)) {
        problems.push(`${file.path}: hooks.${event} is not an event this chapter has; skipped`);
        continue;
      }
      if (!Array.isArray(entries)) {
        problems.push(`${file.path}: hooks.${event} must be a list; skipped`);
        continue;
      }
      entries.forEach((entry: unknown, i) => {
        const where = `${file.path}: hooks.${event}[${i}]`;
        if (!isObject(entry) || !Array.isArray(entry.hooks)) {
          problems.push(`${where} needs a "hooks" list; skipped`);
          return;
        }
        const matcher = entry.matcher === undefined ? "" : entry.matcher;
        if (typeof matcher !== "string" || (matcher !== "*" && !validRegex(matcher))) {
          problems.push(
            `${where}.matcher ${JSON.stringify(matcher)} is not a valid pattern; skipped`,
          );
          return;
        }
        entry.hooks.forEach((spec: unknown, j) => {
          const at = `${where}.hooks[${j}]`;
          if (!isObject(spec) || spec.type !== "command") {
            const type = isObject(spec) ? JSON.stringify(spec.type) : "missing";
            problems.push(`${at}: type ${type} is not supported (only "command"); skipped`);
            return;
          }
          if (typeof spec.command !== "string" || !spec.command.trim()) {
            problems.push(`${at}: "command" must be a non-empty string; skipped`);
            return;
          }
          const timeout = spec.timeout ?? DEFAULT_HOOK_TIMEOUT_S;
          if (typeof timeout !== "number" || !(timeout > 0)) {
            problems.push(`${at}: "timeout" must be a positive number of seconds; skipped`);
            return;
          }
          // Ignoring a condition would run the hook where its author said not to.
          const unsupported = UNSUPPORTED_FIELDS.filter((field) => spec[field] !== undefined);
          if (unsupported.length > 0) {
            const fields = unsupported.map((field) => `"${field}"`).join(", ");
            const verb = unsupported.length > 1 ? "are" : "is";
            problems.push(`${at}: ${fields} ${verb} not supported here; skipped`);
            return;
          }
          hooks.push({
            event,
            matcher: matcher === "" || matcher === "*" ? null : matcher,
            command: spec.command,
            timeoutS: timeout,
            file: file.label,
          });
        });
      });
    }
  }
  return { hooks, problems };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function validRegex(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}
