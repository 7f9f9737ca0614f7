/**
 * Hooks (s04): code that runs around the loop at named events, so new concerns (logging,
 * checks, notifications) plug in without another line in the loop.
 *
 *   UserPromptSubmit  a typed line, before it joins the history   can drop it or add context
 *   PreToolUse        before each tool call                       can block the call
 *   PostToolUse       after each tool call                        observes (a command hook can add feedback)
 *   Stop              when the model wants to stop                can ask it to keep going (capped)
 *
 * Two kinds of hook share one bus: in-code hooks (functions registered here; s03's
 * permission pipeline is the first PreToolUse hook) and command hooks from
 * `.claude/settings*.json` in Claude Code's shape, which get a JSON object on stdin and
 * answer with their exit code and stdout. Per event, in-code hooks run first in
 * registration order, then command hooks in file order; the first result wins.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { EventSink, SessionLog, Tone, ToolContext, ToolMap, ToolOutput } from "shared";
import { runCommand } from "./bash.ts";
import type { LoopSeams, ToolCall, ToolGate } from "./loop.ts";
import type { SettingsFile } from "./settings.ts";

/** Forced continuations a Stop hook may cause in one loop run. */
export const MAX_STOP_CONTINUATIONS = 3;
/** Seconds a command hook may run when its settings give no `timeout`. */
export const DEFAULT_HOOK_TIMEOUT_S = 60;
/** PostToolUse sample hook: outputs longer than this get a warning. */
export const LARGE_OUTPUT_CHARS = 100_000;

export const HOOK_EVENTS = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];
/** Events command hooks may name: Claude Code's `SubagentStop` fires for subagents (s06). */
const COMMAND_EVENTS = new Set<string>([...HOOK_EVENTS, "SubagentStop"]);
const TOOL_EVENTS = new Set<string>(["PreToolUse", "PostToolUse"]);

type MessageParam = Anthropic.MessageParam;

export interface HookContext {
  scope: string;
  workdir: string;
  /** True once a Stop hook has forced a continuation in this loop run. */
  stopHookActive: boolean;
  /** Tool calls seen by PreToolUse this session (the bus's own count). */
  toolCalls: number;
  signal: AbortSignal;
  /** Prints `[hook] <Event>(<hook>): <text>` with the scope's prefix. */
  print(text: string, tone?: Tone): void;
}

/**
 * What an in-code hook returns: null (or "") for no result; a string is a result (blocks a
 * PreToolUse call, continues after Stop); `{ text, shown: true }` is a result the hook
 * has already shown the user (the permission hook's denials).
 */
export type HookResult = string | { text: string; shown: true; output?: ToolOutput } | null;

export interface HookArgs {
  UserPromptSubmit: [prompt: string];
  PreToolUse: [call: ToolCall];
  PostToolUse: [call: ToolCall, output: ToolOutput];
  Stop: [messages: MessageParam[]];
}

export type Hook<E extends HookEvent> = (
  ...args: [...HookArgs[E], HookContext]
) => HookResult | Promise<HookResult>;

export interface CommandHook {
  event: string;
  /** Tool-name regex (tool events), or null for every tool. */
  matcher: string | null;
  command: string;
  timeoutS: number;
  /** The settings file it came from. */
  file: string;
}

export interface HookBusOptions {
  workdir: string;
  tools: ToolMap;
  emit: EventSink;
  log: SessionLog;
  /** Runs command hooks with the turn's environment plus CLAUDE_PROJECT_DIR. */
  env?: NodeJS.ProcessEnv;
}

type Registered = { [E in HookEvent]: Array<{ name: string; hook: Hook<E> }> };

export class HookBus {
  private readonly hooks: Registered = {
    UserPromptSubmit: [],
    PreToolUse: [],
    PostToolUse: [],
    Stop: [],
  };
  private readonly commands: CommandHook[] = [];
  private toolCalls = 0;

  constructor(private readonly options: HookBusOptions) {}

  /** Adds an in-code hook; hooks of one event run in registration order. */
  register<E extends HookEvent>(event: E, name: string, hook: Hook<E>): void {
    (this.hooks[event] as Array<{ name: string; hook: Hook<E> }>).push({ name, hook });
  }

  /** Adds command hooks loaded from the settings files (after every in-code hook). */
  addCommandHooks(hooks: CommandHook[]): void {
    this.commands.push(...hooks);
  }

  /** The loop seams for one loop run of `scope` (the Stop cap starts at zero). */
  loopSeams(scope: string): Pick<LoopSeams, "beforeToolCall" | "afterToolCall" | "onStop"> {
    let continuations = 0;
    const beforeToolCall: ToolGate = (call, context) => this.preToolUse(call, context);
    return {
      beforeToolCall,
      afterToolCall: (call, output, context) => this.postToolUse(call, output, context),
      onStop: async (messages) => {
        const context = {
          workdir: this.options.workdir,
          scope,
          signal: new AbortController().signal,
        };
        const more = await this.stop(messages, context, continuations > 0);
        if (!more) return null;
        if (continuations >= MAX_STOP_CONTINUATIONS) {
          this.say(
            scope,
            `[hook] Stop: continuation cap (${MAX_STOP_CONTINUATIONS}) reached; stopping`,
            "dim",
          );
          return null;
        }
        continuations++;
        return more;
      },
    };
  }

  /** PreToolUse: a result blocks the call and becomes its is_error tool_result. */
  async preToolUse(call: ToolCall, context: ToolContext): Promise<ToolOutput | null> {
    this.toolCalls++;
    for (const { name, hook } of this.hooks.PreToolUse) {
      let result: HookResult;
      try {
        result = await hook(call, this.context("PreToolUse", name, context, false));
      } catch (error) {
        // Fail closed: a broken guard must not let the call through.
        const text = `Error: PreToolUse hook ${name} failed: ${(error as Error).message}`;
        this.report(context.scope, "PreToolUse", name, "error", text, "error");
        return { content: text, isError: true };
      }
      const found = resultOf(result);
      if (!found) continue;
      this.report(context.scope, "PreToolUse", name, "block", found.text, "warn", found.shown);
      return found.output ?? { content: found.text, isError: true, quiet: found.shown };
    }
    for (const hook of this.matching("PreToolUse", call.name)) {
      const outcome = await this.runCommandHook(hook, context, {
        tool_name: call.name,
        tool_input: call.input,
        tool_use_id: call.id,
      });
      if (outcome.block !== null) {
        const text = `Blocked by PreToolUse hook (${hook.command}): ${outcome.block}`;
        return { content: text, isError: true, quiet: true };
      }
    }
    return null;
  }

  /** PostToolUse: observes; a command hook's block adds feedback to the result. */
  async postToolUse(call: ToolCall, output: ToolOutput, context: ToolContext): Promise<ToolOutput> {
    for (const { name, hook } of this.hooks.PostToolUse) {
      const result = await this.observe("PostToolUse", name, context, () =>
        hook(call, output, this.context("PostToolUse", name, context, false)),
      );
      if (result) break;
    }
    for (const hook of this.matching("PostToolUse", call.name)) {
      const outcome = await this.runCommandHook(hook, context, {
        tool_name: call.name,
        tool_input: call.input,
        tool_use_id: call.id,
        tool_response: output.content,
      });
      if (outcome.block !== null) {
        return {
          ...output,
          content: `${output.content}\nPostToolUse hook feedback: ${outcome.block}`,
        };
      }
    }
    return output;
  }

  /**
   * UserPromptSubmit, once per typed line: the user message's content (the line, plus
   * context from command hooks as text blocks after it), or null when a hook blocks it.
   */
  async userPromptSubmit(prompt: string, signal = new AbortController().signal) {
    const context = { workdir: this.options.workdir, scope: "main", signal };
    for (const { name, hook } of this.hooks.UserPromptSubmit) {
      const result = await this.observe("UserPromptSubmit", name, context, () =>
        hook(prompt, this.context("UserPromptSubmit", name, context, false)),
      );
      if (result) break;
    }
    const extra: string[] = [];
    for (const hook of this.matching("UserPromptSubmit", null)) {
      const outcome = await this.runCommandHook(hook, context, { prompt });
      if (outcome.block !== null) {
        this.say("main", `[hook] prompt not sent: ${outcome.block}`, "warn");
        return null;
      }
      if (outcome.context) extra.push(outcome.context);
    }
    if (extra.length === 0) return prompt;
    const blocks: Anthropic.TextBlockParam[] = [prompt, ...extra].map((text) => ({
      type: "text",
      text,
    }));
    return blocks;
  }

  /** Stop (SubagentStop for command hooks in a subagent): text to continue with, or null. */
  async stop(
    messages: MessageParam[],
    context: Pick<ToolContext, "workdir" | "scope" | "signal">,
    stopHookActive: boolean,
  ): Promise<string | null> {
    for (const { name, hook } of this.hooks.Stop) {
      const hookContext = this.context("Stop", name, context, stopHookActive);
      const result = await this.observe("Stop", name, context, () => hook(messages, hookContext));
      if (result) {
        this.say(context.scope, `[hook] Stop(${name}) asks to continue: ${result.text}`, "warn");
        return result.text;
      }
    }
    const event = context.scope === "main" ? "Stop" : "SubagentStop";
    for (const hook of this.matching(event, null)) {
      const outcome = await this.runCommandHook(hook, context, {
        stop_hook_active: stopHookActive,
      });
      if (outcome.block !== null) return outcome.block;
    }
    return null;
  }

  /** One line per loaded command hook, so a cloned project's hooks are seen before they run. */
  describeCommandHooks(): string[] {
    return this.commands.map(
      (hook) =>
        `[hook] ${hook.event}${hook.matcher ? ` (matcher ${hook.matcher})` : ""}: ${hook.command} ` +
        `from ${hook.file}`,
    );
  }

  // -------------------------------------------------------------------------------------

  private context(
    event: HookEvent,
    name: string,
    context: Pick<ToolContext, "workdir" | "scope" | "signal">,
    stopHookActive: boolean,
  ): HookContext {
    return {
      scope: context.scope,
      workdir: context.workdir,
      signal: context.signal,
      stopHookActive,
      toolCalls: this.toolCalls,
      print: (text, tone = "dim") =>
        this.say(context.scope, `[hook] ${event}(${name}): ${text}`, tone),
    };
  }

  /** Runs an observing hook: failures are printed and ignored, results printed and logged. */
  private async observe(
    event: HookEvent,
    name: string,
    context: Pick<ToolContext, "scope">,
    run: () => HookResult | Promise<HookResult>,
  ) {
    try {
      const found = resultOf(await run());
      if (found && event !== "Stop")
        this.report(context.scope, event, name, "result", found.text, "dim");
      return found;
    } catch (error) {
      const text = `${event} hook ${name} failed: ${(error as Error).message}`;
      this.report(context.scope, event, name, "error", text, "error");
      return null;
    }
  }

  private matching(event: string, toolName: string | null): CommandHook[] {
    return this.commands.filter((hook) => {
      if (hook.event !== event) return false;
      if (!TOOL_EVENTS.has(event) || hook.matcher === null || toolName === null) return true;
      const names = [toolName, ...(this.options.tools.get(toolName)?.aliases ?? [])];
      const pattern = new RegExp(`^(?:${hook.matcher})$`);
      return names.some((name) => pattern.test(name));
    });
  }

  /**
   * Runs one command hook: JSON on stdin, then Claude Code's rules. Exit 0 passes unless
   * stdout is JSON that blocks; exit 2 blocks with stderr; other codes are reported and
   * ignored; a timeout kills the hook's process group and counts as passed.
   */
  private async runCommandHook(
    hook: CommandHook,
    context: Pick<ToolContext, "workdir" | "scope" | "signal">,
    fields: Record<string, unknown>,
  ): Promise<{ block: string | null; context?: string }> {
    const eventName = hook.event;
    const input = {
      session_id: this.options.log.sessionId,
      transcript_path: this.options.log.apiPath,
      cwd: this.options.workdir,
      hook_event_name: eventName,
      ...fields,
    };
    const run = await runCommand(hook.command, {
      cwd: this.options.workdir,
      timeoutMs: hook.timeoutS * 1000,
      signal: context.signal,
      stdin: JSON.stringify(input),
      env: { ...(this.options.env ?? process.env), CLAUDE_PROJECT_DIR: this.options.workdir },
    });
    const record = (outcome: string, detail?: string) =>
      this.options.log.record(
        "hook",
        { event: eventName, command: hook.command, outcome, detail },
        context.scope,
      );
    if (run.timedOut) {
      this.say(context.scope, `[hook] ${hook.command} timed out after ${hook.timeoutS}s`, "warn");
      record("timeout");
      return { block: null };
    }
    if (run.error !== null || (run.exitCode !== 0 && run.exitCode !== 2)) {
      const why = run.error ?? `exit status ${run.exitCode ?? run.signal}`;
      const stderr = run.stderr.trim();
      this.say(
        context.scope,
        `[hook] ${hook.command} failed (${why})${stderr ? `: ${stderr}` : ""}; ignored`,
        "warn",
      );
      record("failed", why);
      return { block: null };
    }
    const verb = eventName.endsWith("Stop") ? "asks to continue" : "blocked";
    if (run.exitCode === 2) {
      const reason = run.stderr.trim() || `blocked by hook ${hook.command}`;
      this.say(context.scope, `[hook] ${eventName} (${hook.command}) ${verb}: ${reason}`, "warn");
      record("block", reason);
      return { block: reason };
    }
    const stdout = run.stdout.trim();
    if (!stdout.startsWith("{")) {
      record("pass");
      return {
        block: null,
        ...(stdout && eventName === "UserPromptSubmit" ? { context: stdout } : {}),
      };
    }
    let reply: Record<string, unknown>;
    try {
      reply = JSON.parse(stdout) as Record<string, unknown>;
    } catch {
      this.say(
        context.scope,
        `[hook] ${hook.command}: invalid hook output (not JSON); ignored`,
        "warn",
      );
      record("invalid output", stdout.slice(0, 200));
      return { block: null };
    }
    const specific = (reply.hookSpecificOutput ?? {}) as Record<string, unknown>;
    let block: string | null = null;
    if (reply.decision === "block")
      block = String(reply.reason ?? `blocked by hook ${hook.command}`);
    else if (specific.permissionDecision === "deny") {
      block = String(specific.permissionDecisionReason ?? `blocked by hook ${hook.command}`);
    }
    if (block !== null) {
      this.say(context.scope, `[hook] ${eventName} (${hook.command}) ${verb}: ${block}`, "warn");
      record("block", block);
      return { block };
    }
    record("pass");
    const extra = specific.additionalContext;
    return { block: null, ...(typeof extra === "string" && extra ? { context: extra } : {}) };
  }

  private report(
    scope: string,
    event: HookEvent,
    name: string,
    outcome: string,
    text: string,
    tone: Tone,
    alreadyShown = false,
  ) {
    this.options.log.record("hook", { event, hook: name, outcome, text }, scope);
    if (!alreadyShown) this.say(scope, `[hook] ${event}(${name}): ${text}`, tone);
  }

  private say(scope: string, text: string, tone: Tone) {
    this.options.emit({ type: "notice", scope, text, tone });
  }
}

/** Only a non-empty string (or a shown result) counts; "" and null are "no result". */
function resultOf(
  result: HookResult,
): { text: string; shown: boolean; output?: ToolOutput } | null {
  if (result === null || result === "") return null;
  if (typeof result === "string") return { text: result, shown: false };
  return { text: result.text, shown: true, ...(result.output ? { output: result.output } : {}) };
}

// ---------------------------------------------------------------------------------------
// Command hooks from the settings files
// ---------------------------------------------------------------------------------------

/**
 * Reads the `hooks` sections in Claude Code's shape:
 * `{ "<Event>": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "…", "timeout": 30 }] }] }`.
 * Problems are reported with the file; events and hook types this chapter lacks are
 * reported once and skipped.
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

// ---------------------------------------------------------------------------------------
// The sample in-code hooks, registered in this order by main.ts
// ---------------------------------------------------------------------------------------

/** UserPromptSubmit: notes where the agent works (it does not change the prompt). */
export const contextInjectHook: Hook<"UserPromptSubmit"> = (_prompt, context) => {
  context.print(`working in ${context.workdir}`);
  return null;
};

/** PreToolUse, first: s03's permission pipeline, unchanged. Its denials print themselves. */
export function permissionHook(gate: ToolGate): Hook<"PreToolUse"> {
  return async (call, context) => {
    const refusal = await gate(call, {
      workdir: context.workdir,
      scope: context.scope,
      signal: context.signal,
    });
    return refusal ? { text: refusal.content, shown: true, output: refusal } : null;
  };
}

/** PreToolUse, after the permission hook: so blocked calls are never logged here. */
export const logHook: Hook<"PreToolUse"> = (call, context) => {
  context.print(call.name);
  return null;
};

/** PostToolUse: warns about outputs large enough to crowd the context window. */
export const largeOutputHook: Hook<"PostToolUse"> = (call, output, context) => {
  if (output.content.length > LARGE_OUTPUT_CHARS) {
    context.print(`Large output from ${call.name}: ${output.content.length} chars`, "warn");
  }
  return null;
};

/** Stop: how many tool calls this session has made (its own count, not the history's). */
export const summaryHook: Hook<"Stop"> = (_messages, context) => {
  context.print(`session used ${context.toolCalls} tool calls`);
  return null;
};

/** This mechanism's part of the system prompt. */
export function hooksSection() {
  return {
    id: "hooks",
    text:
      "Hooks: the project may run hooks around your tool calls and when you finish. A call a " +
      "hook blocks returns the hook's reason as an error; a hook may also ask you to keep " +
      "going. Treat hook messages as feedback from the project.",
  };
}
