/**
 * The agent loop (s01 §3.B): call the model, append its reply, run the tool calls it
 * asked for, append their results as one user message, and repeat until a reply asks for
 * no tool. The model decides what to do; the loop only executes and feeds back.
 *
 * Later chapters never edit this file's shape: they plug in at the named seams of
 * `LoopSeams` (DESIGN §7.2), so the same loop runs the main agent, subagents (s06) and
 * teammates (s13).
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  type EventSink,
  isAbortError,
  type ModelClient,
  type ToolContext,
  type ToolMap,
  type ToolOutput,
  toolSpecs,
} from "shared";

export const MAX_TOKENS = 8000;

type Message = Anthropic.Message;
type MessageParam = Anthropic.MessageParam;
type ToolResult = Anthropic.ToolResultBlockParam;

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

/** Decides before a tool runs: a non-null output replaces the call (nothing runs). */
export type ToolGate = (call: ToolCall, context: ToolContext) => Promise<ToolOutput | null>;

/** The places later chapters plug in. Each is optional; absent means "do nothing". */
export interface LoopSeams {
  /** Before each model call; may rewrite `messages` in place (s08 compaction). */
  beforeModelCall?(messages: MessageParam[]): Promise<void>;
  /** Wraps each model call (s08 reactive compaction, s15 retries and streaming). */
  aroundModelCall?(call: () => Promise<Message>, messages: MessageParam[]): Promise<Message>;
  /** Before each tool call, after its input parsed (guard, permissions, PreToolUse hooks). */
  beforeToolCall?: ToolGate;
  /** After each tool call; may replace its output (PostToolUse hooks). */
  afterToolCall?(call: ToolCall, output: ToolOutput, context: ToolContext): Promise<ToolOutput>;
  /**
   * After a round's results are collected, before they are appended. Blocks returned here
   * go after every tool_result of the same user message (s05 reminder).
   */
  afterResults?(results: ToolResult[], response: Message): Anthropic.TextBlockParam[];
  /** After a round's results message was appended (s08 deferred compact, s11 notices). */
  afterBatch?(messages: MessageParam[]): Promise<void>;
  /** At the no-tool_use exit: text returned here continues the loop as a user message (s04 Stop). */
  onStop?(messages: MessageParam[], response: Message): Promise<string | null>;
  /** Every message appended to the history (a per-turn journal: s09). */
  onAppend?(message: MessageParam): void;
}

export interface LoopConfig {
  client: ModelClient;
  model: string;
  maxTokens?: number;
  tools: ToolMap;
  /** The system prompt, or a function that builds it before each call. */
  system: string | (() => string);
  /** Who runs this loop: "main", "sub", a teammate's name (printing, log, usage). */
  scope: string;
  workdir: string;
  /** At most this many model calls (absent: no limit, as in s01). */
  maxTurns?: number;
  signal?: AbortSignal;
  emit: EventSink;
  seams?: LoopSeams;
}

export interface LoopResult {
  /** The last reply: the final answer, unless the turn cap stopped the loop. */
  response: Message;
  turns: number;
  stopped: "done" | "max_turns";
}

export async function agentLoop(messages: MessageParam[], config: LoopConfig): Promise<LoopResult> {
  const seams = config.seams ?? {};
  const signal = config.signal ?? new AbortController().signal;
  const append = (message: MessageParam) => {
    messages.push(message);
    seams.onAppend?.(message);
  };
  let turns = 0;

  // One iteration per model call; the loop ends when a reply asks for no tool.
  for (;;) {
    throwIfAborted(signal);
    await seams.beforeModelCall?.(messages);
    const call = () => callModel(messages, config, signal);
    const response = seams.aroundModelCall
      ? await seams.aroundModelCall(call, messages)
      : await call();
    turns++;
    // Stored exactly as received: thinking blocks and all (DESIGN §2.7).
    append({ role: "assistant", content: response.content });

    const calls = response.content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) {
      for (const block of response.content) {
        if (block.type === "thinking") emitThinking(config, block.thinking);
      }
      const more = await seams.onStop?.(messages, response);
      if (more) {
        // A Stop hook keeps the turn going: show the answer it did not let stand.
        showProse(response, config, false);
        append({ role: "user", content: more });
        continue;
      }
      return { response, turns, stopped: "done" };
    }

    showProse(response, config);
    const context: ToolContext = { workdir: config.workdir, signal, scope: config.scope };
    const results: ToolResult[] = [];
    // In the order the model asked; each call gets exactly one result.
    for (const block of calls) {
      const toolCall = { id: block.id, name: block.name, input: block.input };
      const output = await runTool(toolCall, config, context);
      results.push({
        type: "tool_result",
        tool_use_id: block.id,
        content: output.content,
        ...(output.isError ? { is_error: true } : {}),
      });
    }
    throwIfAborted(signal);
    const extra = seams.afterResults?.(results, response) ?? [];
    append({ role: "user", content: [...results, ...extra] });
    await seams.afterBatch?.(messages);

    if (config.maxTurns !== undefined && turns >= config.maxTurns) {
      return { response, turns, stopped: "max_turns" };
    }
  }
}

function callModel(
  messages: MessageParam[],
  config: LoopConfig,
  signal: AbortSignal,
): Promise<Message> {
  const system = typeof config.system === "function" ? config.system() : config.system;
  return config.client.create(
    {
      model: config.model,
      max_tokens: config.maxTokens ?? MAX_TOKENS,
      system,
      messages,
      tools: toolSpecs(config.tools),
    },
    { scope: config.scope, signal },
  );
}

/** Runs one call; every failure becomes an is_error output, never an exception (DESIGN §2.6). */
async function runTool(call: ToolCall, config: LoopConfig, context: ToolContext) {
  const started = performance.now();
  config.emit({ type: "tool_call", scope: config.scope, ...call });
  const output = await dispatch(call, config, context);
  config.emit({
    type: "tool_result",
    scope: config.scope,
    id: call.id,
    name: call.name,
    content: output.content,
    isError: output.isError === true,
    durationMs: performance.now() - started,
    ...(output.quiet ? { quiet: true } : {}),
  });
  return output;
}

async function dispatch(call: ToolCall, config: LoopConfig, context: ToolContext) {
  // An own-key Map: names such as `constructor` or `__proto__` are simply unknown.
  const tool = config.tools.get(call.name);
  if (!tool) {
    const available = [...config.tools.keys()].join(", ");
    return error(`Error: Unknown tool '${call.name}'. Available tools: ${available}`);
  }
  const parsed = tool.parse(call.input);
  if (!parsed.ok) return error(parsed.error);
  const checked = { ...call, input: parsed.value };
  try {
    const refusal = await config.seams?.beforeToolCall?.(checked, context);
    if (refusal) return refusal;
    const output = await tool.run(parsed.value, context);
    return config.seams?.afterToolCall
      ? await config.seams.afterToolCall(checked, output, context)
      : output;
  } catch (caught) {
    if (isAbortError(caught) || context.signal.aborted) throw caught;
    return error(`Error: ${caught instanceof Error ? caught.message : String(caught)}`);
  }
}

function error(content: string): ToolOutput {
  return { content, isError: true };
}

/** Text and thinking that come with tool calls are shown before the calls run. */
function showProse(response: Message, config: LoopConfig, withThinking = true): void {
  for (const block of response.content) {
    if (block.type === "text") config.emit({ type: "text", scope: config.scope, text: block.text });
    if (block.type === "thinking" && withThinking) emitThinking(config, block.thinking);
  }
}

function emitThinking(config: LoopConfig, text: string): void {
  config.emit({ type: "thinking", scope: config.scope, text });
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) {
    const abort = new Error("The turn was interrupted.");
    abort.name = "AbortError";
    throw abort;
  }
}

/**
 * The answer of a reply (s01 §3.F): its text blocks joined, or a placeholder that says
 * why there is none.
 */
export function textOf(response: Message): string {
  const text = response.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
  switch (response.stop_reason) {
    case "max_tokens":
      return text
        ? `${text}\n[truncated: hit max_tokens]`
        : "[no output: hit max_tokens before the model produced any text]";
    case "refusal":
      return text || "[model declined to respond]";
    case "pause_turn":
      return text || "[paused mid-turn]";
    default:
      return text || "[no text in response]";
  }
}
