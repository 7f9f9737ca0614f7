/**
 * Hooks: code that runs around the loop at named events, so new concerns (logging,
 * checks, notifications) plug in without another line in the loop.
 *
 *   UserPromptSubmit  a typed line, before it joins the history   can drop it or add context
 *   PreToolUse        before each tool call, before the gates     can block it, rewrite its input,
 *                                                                 or say allow / ask to the gates
 *   PostToolUse       after each tool call                        observes (a command hook can add feedback)
 *   Stop              when the model wants to stop                can ask it to keep going (in-code: capped)
 *
 * Two kinds of hook share one bus: in-code hooks (functions registered here) and command
 * hooks from `.claude/settings*.json` in Claude Code's shape (command-hooks.ts). Per event,
 * in-code hooks run first in registration order, then command hooks in file order; the
 * first result wins. PreToolUse runs where Claude Code runs it, before the permission
 * gates (the loop's reviewToolCall seam): a hook's block ends the call before anyone is
 * asked, and its "allow" or "ask" reaches the gates as the call's verdict.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { EventSink, SessionLog, Tone, ToolMap, ToolOutput } from "shared";
import {
  type CommandHook,
  type CommandOutcome,
  parseCommandHooks,
  runCommandHook,
} from "./command-hooks.ts";
import type {
  CallOutput,
  LoopSeams,
  Mechanism,
  Review,
  RunContext,
  ToolCall,
  TurnInput,
} from "./contract.ts";
import type { Harness } from "./harness.ts";
import { withPluginRoot } from "./plugins.ts";
import { loadSettings } from "./settings.ts";
import { ClaudeTranscript } from "./transcript.ts";

/**
 * Forced continuations the in-code Stop hooks may cause in one loop run. A command hook has
 * no cap, as in Claude Code: it ends the loop itself (`stop_hook_active` says it is in one).
 */
export const MAX_STOP_CONTINUATIONS = 3;
/** PostToolUse sample hook: outputs longer than this get a warning. */
export const LARGE_OUTPUT_CHARS = 100_000;

export const HOOK_EVENTS = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];
const TOOL_EVENTS = new Set<string>(["PreToolUse", "PostToolUse"]);

type MessageParam = Anthropic.MessageParam;
/** Where a hook runs: the scope that caused it, the workspace and the turn's signal. */
type Where = Pick<RunContext, "workdir" | "scope" | "signal"> & Partial<Pick<RunContext, "role">>;

export interface HookContext {
  scope: string;
  workdir: string;
  /** True once a Stop hook has forced a continuation in this loop run. */
  stopHookActive: boolean;
  /** Tool calls the model has asked for this session (the bus's own count). */
  toolCalls: number;
  signal: AbortSignal;
  /**
   * Reports what the hook did: `[hook] <Event>(<hook>): <text>` on the terminal when the
   * bus shows passes (s04), else as a `hook` record in the session log.
   */
  print(text: string, tone?: Tone): void;
}

/**
 * What an in-code hook returns: null (or "") for no result; a string is a result (blocks a
 * PreToolUse call, continues after Stop).
 */
export type HookResult = string | null;

export interface HookArgs {
  UserPromptSubmit: [prompt: string];
  PreToolUse: [call: ToolCall];
  PostToolUse: [call: ToolCall, output: ToolOutput];
  Stop: [messages: MessageParam[]];
}

export type Hook<E extends HookEvent> = (
  ...args: [...HookArgs[E], HookContext]
) => HookResult | Promise<HookResult>;

export interface HookBusOptions {
  workdir: string;
  emit: EventSink;
  log: SessionLog;
  /** Runs command hooks with this environment plus CLAUDE_PROJECT_DIR. */
  env?: NodeJS.ProcessEnv;
  /**
   * Print what hooks do even when it changes nothing (s04 shows its sample hooks at work).
   * Off: such lines go to the session log only, as Claude Code prints nothing for a hook
   * that passes. Blocks, added context and Stop continuations always print.
   */
  showPasses?: boolean;
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
  private readonly options: HookBusOptions;
  /** The main agent's conversation in Claude Code's shape, for command hooks. */
  private readonly transcript: ClaudeTranscript;

  constructor(options: HookBusOptions) {
    this.options = options;
    this.transcript = new ClaudeTranscript({ workdir: options.workdir, log: options.log });
  }

  /** A message of the main agent, for the transcript command hooks read (none: no file). */
  converse(message: MessageParam): void {
    if (this.commands.length > 0) this.transcript.add(message);
  }

  /** Adds an in-code hook; hooks of one event run in registration order. */
  register<E extends HookEvent>(event: E, name: string, hook: Hook<E>): void {
    (this.hooks[event] as Array<{ name: string; hook: Hook<E> }>).push({ name, hook });
  }

  /** Adds command hooks loaded from the settings files (after every in-code hook). */
  addCommandHooks(hooks: CommandHook[]): void {
    this.commands.push(...hooks);
  }

  /** The loop seams for one loop run (the Stop cap starts at zero). */
  loopSeams(): LoopSeams {
    let continuations = 0;
    let inCode = 0;
    return {
      reviewToolCall: (call, run) => this.preToolUse(call, run),
      afterToolCall: (call, output, run) => this.postToolUse(call, output, run),
      afterResults: (round) => {
        this.toolCalls += round.length;
        return [];
      },
      onAppend: (message, _origin, run) => {
        if (run.scope === "main") this.converse(message);
      },
      onStop: async (messages, _response, run) => {
        const answer = await this.stop(messages, run, continuations > 0);
        if (!answer) return null;
        continuations++;
        if (answer.command) return answer.text;
        if (++inCode > MAX_STOP_CONTINUATIONS) {
          this.say(
            run.scope,
            `[hook] Stop: continuation cap (${MAX_STOP_CONTINUATIONS}) reached; stopping`,
            "dim",
          );
          return null;
        }
        return answer.text;
      },
    };
  }

  /**
   * PreToolUse, before the gates: a result refuses the call (an is_error tool_result); a
   * command hook may also rewrite the input (`updatedInput`) or give the gates a verdict
   * (`permissionDecision` "allow" or "ask"), and `continue: false` halts the run.
   */
  async preToolUse(call: ToolCall, run: Where & { tools: ToolMap }): Promise<Review> {
    for (const { name, hook } of this.hooks.PreToolUse) {
      let result: HookResult;
      try {
        result = await hook(call, this.context("PreToolUse", name, run, false));
      } catch (error) {
        // Fail closed: a broken guard must not let the call through.
        const text = `Error: PreToolUse hook ${name} failed: ${(error as Error).message}`;
        this.report(run.scope, "PreToolUse", name, "error", text, "error");
        return { refuse: { content: text, isError: true } };
      }
      if (!result) continue;
      this.report(run.scope, "PreToolUse", name, "block", result, "warn");
      return { refuse: { content: result, isError: true } };
    }
    let reviewed = call;
    for (const hook of this.matching("PreToolUse", call.name, run.tools)) {
      const outcome = await this.runCommand(hook, run, {
        ...claudeCodeCall(reviewed, run),
        tool_use_id: call.id,
      });
      const by = `PreToolUse hook (${hook.command})`;
      if (outcome.stop !== undefined) {
        // The reason is the user's; the model learns only that a hook stopped the call.
        this.say(run.scope, `[hook] PreToolUse: ${outcome.stop}`, "warn");
        return {
          refuse: { content: `Stopped by ${by}`, isError: true, quiet: true, halt: outcome.stop },
        };
      }
      if (outcome.block !== null) {
        return {
          refuse: { content: `Blocked by ${by}: ${outcome.block}`, isError: true, quiet: true },
        };
      }
      if (outcome.input) {
        const from = run.tools.get(call.name)?.claudeCode?.from;
        reviewed = { ...reviewed, input: from ? from(outcome.input) : outcome.input };
        this.say(
          run.scope,
          `[hook] ${by} changed the input: ${JSON.stringify(reviewed.input)}`,
          "warn",
        );
      }
      // Several hooks: "ask" wins over "allow".
      if (outcome.decision && reviewed.verdict?.decision !== "ask") {
        reviewed = { ...reviewed, verdict: { ...outcome.decision, by } };
      }
    }
    return { call: reviewed };
  }

  /** PostToolUse: observes; a command hook's block adds feedback to the result. */
  async postToolUse(
    call: ToolCall,
    output: ToolOutput,
    run: Where & { tools: ToolMap },
  ): Promise<CallOutput> {
    for (const { name, hook } of this.hooks.PostToolUse) {
      const result = await this.observe("PostToolUse", name, run, () =>
        hook(call, output, this.context("PostToolUse", name, run, false)),
      );
      if (result) break;
    }
    let result: CallOutput = output;
    for (const hook of this.matching("PostToolUse", call.name, run.tools)) {
      const outcome = await this.runCommand(hook, run, {
        ...claudeCodeCall(call, run),
        tool_use_id: call.id,
        tool_response: output.content,
      });
      // continue: false ends the run once this round's results are in.
      if (outcome.stop !== undefined) {
        this.say(run.scope, `[hook] PostToolUse: ${outcome.stop}`, "warn");
        result = { ...result, halt: outcome.stop };
      }
      if (outcome.block !== null) {
        return {
          ...result,
          content: `${result.content}\nPostToolUse hook feedback: ${outcome.block}`,
        };
      }
      // hookSpecificOutput.additionalContext: for the model, after the result.
      if (outcome.context) {
        result = {
          ...result,
          content: `${result.content}\nPostToolUse hook context: ${outcome.context}`,
        };
      }
    }
    return result;
  }

  /**
   * UserPromptSubmit, once per typed line: the user message's content (the line, plus
   * context from command hooks as text blocks after it), or null when a hook blocks it.
   */
  async userPromptSubmit(prompt: string, signal = new AbortController().signal) {
    const where = { workdir: this.options.workdir, scope: "main", signal };
    for (const { name, hook } of this.hooks.UserPromptSubmit) {
      const result = await this.observe("UserPromptSubmit", name, where, () =>
        hook(prompt, this.context("UserPromptSubmit", name, where, false)),
      );
      if (result) break;
    }
    const extra: string[] = [];
    for (const hook of this.matching("UserPromptSubmit", null, null)) {
      const outcome = await this.runCommand(hook, where, { prompt });
      const refusal = outcome.stop ?? outcome.block;
      if (refusal !== null) {
        this.say("main", `[hook] prompt not sent: ${refusal}`, "warn");
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

  /**
   * Stop (SubagentStop for command hooks in a subagent): the text to continue with, and
   * whether a command hook gave it, or null.
   */
  async stop(
    messages: MessageParam[],
    where: Where,
    stopHookActive: boolean,
  ): Promise<{ text: string; command: boolean } | null> {
    for (const { name, hook } of this.hooks.Stop) {
      const hookContext = this.context("Stop", name, where, stopHookActive);
      const result = await this.observe("Stop", name, where, () => hook(messages, hookContext));
      if (result) {
        this.say(where.scope, `[hook] Stop(${name}) asks to continue: ${result}`, "warn");
        return { text: result, command: false };
      }
    }
    const event = where.scope === "main" ? "Stop" : "SubagentStop";
    for (const hook of this.matching(event, null, null)) {
      const outcome = await this.runCommand(hook, where, { stop_hook_active: stopHookActive });
      if (outcome.stop !== undefined) {
        this.say(where.scope, `[hook] ${event}: ${outcome.stop}`, "warn");
        return null;
      }
      if (outcome.block !== null) return { text: outcome.block, command: true };
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
    where: Where,
    stopHookActive: boolean,
  ): HookContext {
    return {
      scope: where.scope,
      workdir: where.workdir,
      signal: where.signal,
      stopHookActive,
      toolCalls: this.toolCalls,
      print: (text, tone = "dim") => {
        if (this.options.showPasses) {
          this.say(where.scope, `[hook] ${event}(${name}): ${text}`, tone);
        } else {
          this.options.log.record(
            "hook",
            { event, hook: name, outcome: "note", text },
            where.scope,
          );
        }
      },
    };
  }

  /** Runs an observing hook: failures are printed and ignored, results printed and logged. */
  private async observe(
    event: HookEvent,
    name: string,
    where: Pick<Where, "scope">,
    run: () => HookResult | Promise<HookResult>,
  ): Promise<string | null> {
    try {
      const result = await run();
      if (result && event !== "Stop")
        this.report(where.scope, event, name, "result", result, "dim");
      return result || null;
    } catch (error) {
      const text = `${event} hook ${name} failed: ${(error as Error).message}`;
      this.report(where.scope, event, name, "error", text, "error");
      return null;
    }
  }

  private matching(event: string, toolName: string | null, tools: ToolMap | null) {
    return this.commands.filter((hook) => {
      if (hook.event !== event) return false;
      if (!TOOL_EVENTS.has(event) || hook.matcher === null || toolName === null) return true;
      const names = [toolName, ...(tools?.get(toolName)?.aliases ?? [])];
      const pattern = new RegExp(`^(?:${hook.matcher})$`);
      return names.some((name) => pattern.test(name));
    });
  }

  private runCommand(
    hook: CommandHook,
    where: Where,
    fields: Record<string, unknown>,
  ): Promise<CommandOutcome> {
    // A teammate's calls say which teammate made them: `agent_name` in the input.
    const agent = where.role === "teammate" ? { agent_name: where.scope } : {};
    return runCommandHook(
      hook,
      { ...fields, ...agent },
      {
        ...where,
        log: this.options.log,
        transcriptPath: this.transcript.ensure(),
        env: this.options.env ?? process.env,
        say: (text, tone) => this.say(where.scope, text, tone),
      },
    );
  }

  private report(
    scope: string,
    event: HookEvent,
    name: string,
    outcome: string,
    text: string,
    tone: Tone,
  ) {
    this.options.log.record("hook", { event, hook: name, outcome, text }, scope);
    this.say(scope, `[hook] ${event}(${name}): ${text}`, tone);
  }

  private say(scope: string, text: string, tone: Tone) {
    this.options.emit({ type: "notice", scope, text, tone });
  }
}

// ---------------------------------------------------------------------------------------
// The sample in-code hooks, registered in this order by hooksMechanism
// ---------------------------------------------------------------------------------------

/** UserPromptSubmit: notes where the agent works (it does not change the prompt). */
export const contextInjectHook: Hook<"UserPromptSubmit"> = (_prompt, context) => {
  context.print(`working in ${context.workdir}`);
  return null;
};

/** PreToolUse: notes each call, before the permission gates judge it. */
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

/**
 * A call as a hook written for Claude Code reads it: the tool's name there and the input
 * with Claude Code's field names and absolute paths, as the tool itself declares them
 * (`claudeCode`); a tool Claude Code lacks keeps its own name and input.
 */
export function claudeCodeCall(
  call: ToolCall,
  run: { workdir: string; tools: ToolMap },
): { tool_name: string; tool_input: unknown } {
  const tool = run.tools.get(call.name);
  return {
    tool_name: tool?.claudeCode?.name ?? call.name,
    tool_input: tool?.claudeCode?.input?.(call.input, run.workdir) ?? call.input,
  };
}

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

/**
 * Hooks as a mechanism: the sample in-code hooks and the project's command hooks on one
 * bus, at the loop's tool seams and its Stop exit, and at the REPL's prepare step for
 * UserPromptSubmit. Teammates get the tool events only: their loops have no Stop hooks.
 */
export function hooksMechanism(
  harness: Pick<Harness, "workdir" | "emit" | "log" | "env" | "plugins">,
  options: { showPasses?: boolean } = {},
): Mechanism {
  const bus = new HookBus({
    workdir: harness.workdir,
    emit: harness.emit,
    log: harness.log,
    env: harness.env,
    showPasses: options.showPasses ?? false,
  });
  bus.register("UserPromptSubmit", "contextInjectHook", contextInjectHook);
  bus.register("PreToolUse", "logHook", logHook);
  bus.register("PostToolUse", "largeOutputHook", largeOutputHook);
  bus.register("Stop", "summaryHook", summaryHook);
  const settings = loadSettings(harness.workdir);
  const commandHooks = parseCommandHooks(settings.files);
  bus.addCommandHooks(commandHooks.hooks);
  // A plugin's hooks run after the project's, with ${CLAUDE_PLUGIN_ROOT} filled in and set.
  const pluginProblems: string[] = [];
  for (const plugin of harness.plugins.plugins) {
    for (const part of plugin.hooks) {
      const file = { label: part.file, path: part.file, permissions: undefined };
      const parsed = parseCommandHooks([{ ...file, hooks: part.value.hooks }]);
      pluginProblems.push(...parsed.problems);
      bus.addCommandHooks(
        parsed.hooks.map((hook) => ({
          ...hook,
          command: withPluginRoot(hook.command, plugin),
          env: { CLAUDE_PLUGIN_ROOT: plugin.root },
        })),
      );
    }
  }
  return {
    name: "hooks",
    sections: () => [hooksSection()],
    loop: (run) => {
      const seams = bus.loopSeams();
      if (run.role === "teammate") delete seams.onStop;
      return seams;
    },
    turn: {
      prepare: async (input: TurnInput) => {
        const content = await bus.userPromptSubmit(input.request);
        return content === null ? null : { ...input, content };
      },
      // A turn's first message joins the history before the loop runs: typed, scheduled or not.
      beforeTurn: async (turn) => {
        const first = turn.history.at(-1);
        if (first) bus.converse(first);
      },
    },
    start: () => [
      ...commandHooks.problems.map((problem) => ({
        text: `[settings] ${problem}`,
        tone: "warn" as const,
      })),
      ...pluginProblems.map((problem) => ({ text: `[plugins] ${problem}`, tone: "warn" as const })),
      ...bus.describeCommandHooks().map((text) => ({ text, tone: "warn" as const })),
    ],
  };
}
