/**
 * The agent loop: call the model, append its reply, run the tool calls it asked for,
 * append their results as one user message, and repeat until a reply asks for no tool.
 * The model decides what to do; the loop only executes and feeds back.
 *
 * Mechanisms plug in at the seams of `LoopSeams` (contract.ts, which also says how several
 * of them combine), and the same loop runs every agent. Every seam gets the run's context:
 * its scope and role, the turn's abort signal, the active request, the system prompt and
 * tools of this run.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  checkInput,
  type EventSink,
  isAbortError,
  type ModelClient,
  type ToolMap,
  type ToolOutput,
  toolSpecs,
} from "shared";
import {
  type CallOutcome,
  type CallOutput,
  composeSeams,
  type LoopResult,
  type LoopSeams,
  type Origin,
  type Role,
  type RunContext,
  type ToolCall,
  type TurnKind,
  tagOrigin,
} from "./contract.ts";

export const MAX_TOKENS = 8000;

type Message = Anthropic.Message;
type MessageParam = Anthropic.MessageParam;
type ToolResult = Anthropic.ToolResultBlockParam;

export interface LoopConfig {
  client: ModelClient;
  model: string;
  maxTokens?: number;
  tools: ToolMap;
  /** The system prompt of this run. */
  system: string;
  /** Who runs this loop, as printing, the log and usage name it ("main": the prompt's agent). */
  scope: string;
  /** Absent: "main". */
  role?: Role;
  /** Absent: "user". */
  turn?: TurnKind;
  /** The active request. Absent: the text of the last user message when the run starts. */
  request?: string;
  workdir: string;
  /** At most this many model calls (absent: no limit, as in s01). */
  maxTurns?: number;
  signal?: AbortSignal;
  emit: EventSink;
  /** One entry per mechanism, in the order main.ts lists them. */
  seams?: LoopSeams[];
}

export async function agentLoop(messages: MessageParam[], config: LoopConfig): Promise<LoopResult> {
  const seams = composeSeams(config.seams ?? []);
  const signal = config.signal ?? new AbortController().signal;
  // Read-only for the seams; the loop is the one writer.
  const run: { -readonly [K in keyof RunContext]: RunContext[K] } = {
    workdir: config.workdir,
    signal,
    scope: config.scope,
    role: config.role ?? "main",
    turn: config.turn ?? "user",
    request: config.request ?? requestText(messages.at(-1)),
    system: config.system,
    tools: config.tools,
  };
  const append = (message: MessageParam, origin: Origin) => {
    messages.push(tagOrigin(message, origin));
    seams.onAppend(message, origin, run);
  };
  let turns = 0;

  // One iteration per model call; the loop ends when a reply asks for no tool.
  for (;;) {
    throwIfAborted(signal);
    await seams.beforeModelCall(messages, run);
    const response = await seams.aroundModelCall(
      () => callModel(messages, config, run),
      messages,
      run,
    );
    turns++;
    // Stored exactly as received: thinking blocks and all.
    append({ role: "assistant", content: response.content }, "model");

    const calls = response.content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) {
      // The answer is shown as it arrives, before a Stop hook judges it. A child's answer
      // is its return value: the tool that started the child shows it.
      showProse(response, config, false);
      if (run.role === "main")
        config.emit({ type: "text", scope: config.scope, text: textOf(response) });
      const continuation = await seams.onStop(messages, response, run);
      if (continuation) {
        append({ role: "user", content: continuation }, "continuation");
        continue;
      }
      return { response, turns, stopped: "done" };
    }

    showProse(response, config);
    const round: CallOutcome[] = [];
    // Set by a seam that halts the run: the calls after it are not run.
    let halt: string | undefined;
    // In the order the model asked; each call gets exactly one result.
    for (const block of calls) {
      const call = { id: block.id, name: block.name, input: block.input };
      const output: CallOutput =
        halt === undefined
          ? await runTool(call, config, run, seams)
          : { content: "Not run: the run was halted before this call.", isError: true };
      halt ??= output.halt;
      round.push({ call, output });
    }
    throwIfAborted(signal);
    const results = round.map(
      ({ call, output }): ToolResult => ({
        type: "tool_result",
        tool_use_id: call.id,
        content: output.content,
        ...(output.isError ? { is_error: true } : {}),
      }),
    );
    const extra = seams.afterResults(round, run);
    append({ role: "user", content: [...results, ...extra] }, "tool_results");
    await seams.afterBatch(messages, run);

    if (halt !== undefined) return { response, turns, stopped: "halted" };
    if (config.maxTurns !== undefined && turns >= config.maxTurns) {
      return { response, turns, stopped: "max_turns" };
    }
  }
}

function callModel(messages: MessageParam[], config: LoopConfig, run: RunContext) {
  return config.client.create(
    {
      model: config.model,
      max_tokens: config.maxTokens ?? MAX_TOKENS,
      system: run.system,
      messages,
      tools: toolSpecs(config.tools),
    },
    { scope: config.scope, signal: run.signal },
  );
}

/** Runs one call; every failure becomes an is_error output, never an exception. */
async function runTool(
  call: ToolCall,
  config: LoopConfig,
  run: RunContext,
  seams: Required<LoopSeams>,
) {
  const started = performance.now();
  config.emit({ type: "tool_call", scope: config.scope, ...call });
  const output = await dispatch(call, config, run, seams);
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

async function dispatch(
  call: ToolCall,
  config: LoopConfig,
  run: RunContext,
  seams: Required<LoopSeams>,
) {
  // An own-key Map: names such as `constructor` or `__proto__` are simply unknown.
  const tool = config.tools.get(call.name);
  if (!tool) {
    const available = [...config.tools.keys()].join(", ");
    return error(`Error: Unknown tool '${call.name}'. Available tools: ${available}`);
  }
  const parsed = checkInput(tool, call.input);
  if (!parsed.ok) return error(parsed.error);
  try {
    const review = await seams.reviewToolCall({ ...call, input: parsed.value }, run);
    if ("refuse" in review) return review.refuse;
    // A review may hand on a new input: it is checked like the model's.
    const again = review.call.input === parsed.value ? parsed : checkInput(tool, review.call.input);
    if (!again.ok) return error(`${again.error} (the input as a review rewrote it)`);
    const checked = { ...review.call, input: again.value };
    const refusal = await seams.beforeToolCall(checked, run);
    if (refusal) return refusal;
    const output = await tool.run(again.value, run);
    return await seams.afterToolCall(checked, output, run);
  } catch (caught) {
    if (isAbortError(caught) || run.signal.aborted) throw caught;
    return error(`Error: ${caught instanceof Error ? caught.message : String(caught)}`);
  }
}

function error(content: string): ToolOutput {
  return { content, isError: true };
}

/** Text and thinking that come with tool calls are shown before the calls run. */
function showProse(response: Message, config: LoopConfig, withText = true): void {
  for (const block of response.content) {
    if (block.type === "text" && withText)
      config.emit({ type: "text", scope: config.scope, text: block.text });
    if (block.type === "thinking")
      config.emit({ type: "thinking", scope: config.scope, text: block.thinking });
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) {
    const abort = new Error("The turn was interrupted.");
    abort.name = "AbortError";
    throw abort;
  }
}

/** A user message's own text: the string, or its first text block ("" for tool results). */
function requestText(message: MessageParam | undefined): string {
  if (message?.role !== "user") return "";
  if (typeof message.content === "string") return message.content;
  const first = message.content.find((block) => block.type === "text");
  return first?.type === "text" ? first.text : "";
}

/** The answer of a reply: its text blocks joined, or a placeholder that says why there is none. */
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
