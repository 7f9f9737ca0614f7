/**
 * The agent loop: call the model, append its reply, run the tool calls it asked for,
 * append their results as one user message, and repeat until a reply asks for no tool.
 * The model decides what to do; the loop only executes and feeds back.
 *
 * Mechanisms plug in at the seams of `LoopSeams` (contract.ts, which also says how several
 * of them combine), and the same loop runs every agent. Every seam gets the run's context:
 * its scope and role, the turn's abort signal, the active request, the system prompt and
 * tools of this run, which the loop alone writes; the working directory, the tools and the
 * system prompt may be asked for again before each call. s15 edits this file
 * (chapters/edits.json): the main agent's replies stream, their text printed as it arrives,
 * a wrapper may override one call's max_tokens
 * (`CallOverrides`, contract.ts), and a seam may refuse a whole reply's calls before any
 * gate sees them (`beforeCalls`: a reply cut off at max_tokens).
 *
 * One round, stage by stage, with the mechanisms of s15's list at each (the seams' order
 * above is the composition; the mechanisms keep their own files):
 *
 *   a. injections       the todo reminder (s05, afterResults of the round before), then
 *                       background notifications (s11, beforeModelCall); a turn's input,
 *                       scheduled text or team events are its first user message
 *   b. prompt and pool  the prompt rebuilt: its stable part is the system prompt, its
 *                       dynamic sections (memory, the clock) reminders on the newest user
 *                       message when changed (s15, remind); the tools gathered again (s14)
 *   c. compaction       L3, then L1 and L2 when over budget or with the cache cold (s15),
 *                       and, still too large, L4, on the history as it will be sent (s08,
 *                       aroundModelCall, outermost of the wrappers)
 *   d. the model call   streamed for the main agent; on prompt-too-long one reactive
 *                       compaction (s08, same wrapper); every call through the recovery
 *                       layer's retries and fallback (s15, extendClient)
 *   e. max_tokens       redo once at 16 000, then keep (s15, aroundModelCall)
 *   f. no tool_use      Stop hooks (s04) and max_tokens continuations (s15), onStop;
 *                       then the turn ends, and memory extraction (s09) runs after it, in
 *                       the REPL's afterTurn
 *   g. each tool_use    a reply cut off at max_tokens refuses every call (s15,
 *                       beforeCalls); otherwise in order: the schema check, PreToolUse
 *                       hooks (reviewToolCall), the gates (the team's plan gate, then
 *                       permissions; beforeToolCall),
 *                       the handler (a background job, s11), PostToolUse (afterToolCall);
 *                       one user message with every result and the text that rides with
 *                       them (afterResults); a `compact` request is served after the
 *                       batch (s08, afterBatch)
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
  type CallOverrides,
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
import type { PromptSection, SystemParts } from "./prompt.ts";

export const MAX_TOKENS = 8000;

type Message = Anthropic.Message;
type MessageParam = Anthropic.MessageParam;
type ToolResult = Anthropic.ToolResultBlockParam;

export interface LoopConfig {
  client: ModelClient;
  model: string;
  maxTokens?: number;
  /** The tools, or a function that gathers them before each call. */
  tools: ToolMap | (() => ToolMap);
  /**
   * The system prompt, or a function that builds it before each call; in its stable and
   * dynamic parts, it goes out as two blocks, the stable one first.
   */
  system: string | SystemParts | (() => string | SystemParts);
  /** Who runs this loop, as printing, the log and usage name it ("main": the prompt's agent). */
  scope: string;
  /** Absent: "main". */
  role?: Role;
  /** Absent: "user". */
  turn?: TurnKind;
  /** The active request. Absent: the text of the last user message when the run starts. */
  request?: string;
  /** The working directory, or a function asked before every tool call. */
  workdir: string | (() => string);
  /** At most this many model calls (absent: no limit, as in s01). */
  maxTurns?: number;
  signal?: AbortSignal;
  emit: EventSink;
  /** One entry per mechanism, in the order main.ts lists them. */
  seams?: LoopSeams[];
}

export async function agentLoop(messages: MessageParam[], config: LoopConfig): Promise<LoopResult> {
  const seams = composeSeams(config.seams ?? []);
  const workdirNow = () =>
    typeof config.workdir === "function" ? config.workdir() : config.workdir;
  const signal = config.signal ?? new AbortController().signal;
  // The parts of the coming call's prompt, when it was built in parts (remind, systemBlocks).
  let parts: SystemParts | null = null;
  // What goes out as the system prompt: a prompt built in parts sends only its stable part.
  const systemNow = (): string => {
    const built = typeof config.system === "function" ? config.system() : config.system;
    parts = typeof built === "string" ? null : built;
    return typeof built === "string" ? built : built.stable;
  };
  const toolsNow = () => (typeof config.tools === "function" ? config.tools() : config.tools);
  // Read-only for the seams; the loop is the one writer.
  const run: { -readonly [K in keyof RunContext]: RunContext[K] } = {
    workdir: workdirNow(),
    signal,
    scope: config.scope,
    role: config.role ?? "main",
    turn: config.turn ?? "user",
    request: config.request ?? requestText(messages.at(-1)),
    system: systemNow(),
    tools: toolsNow(),
  };
  const append = (message: MessageParam, origin: Origin) => {
    messages.push(tagOrigin(message, origin));
    seams.onAppend(message, origin, run);
  };
  let turns = 0;

  // One iteration per model call; the loop ends when a reply asks for no tool.
  for (;;) {
    throwIfAborted(signal);
    run.system = systemNow();
    run.tools = toolsNow();
    await seams.beforeModelCall(messages, run);
    // The closure above sets `parts`; TypeScript cannot see that.
    const built = parts as SystemParts | null;
    if (built) remind(messages, built.notes);
    const streamed = { text: "" };
    const response = await seams.aroundModelCall(
      (overrides) => callModel(messages, config, run, streamed, overrides, parts),
      messages,
      run,
    );
    const live = streams(config, run);
    turns++;
    // Stored exactly as received: thinking blocks and all.
    append({ role: "assistant", content: response.content }, "model");

    const calls = response.content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) {
      // The answer is shown as it arrives, before a Stop hook judges it. A child's answer
      // is its return value: the tool that started the child shows it.
      showProse(response, config, false);
      if (run.role === "main") {
        const answer = textOf(response);
        // A streamed answer is on screen already; what the stream could not show (a
        // placeholder, a note on truncation) follows it.
        if (live && answer.startsWith(streamed.text) && answer !== streamed.text) {
          config.emit({
            type: "text_delta",
            scope: config.scope,
            text: answer.slice(streamed.text.length),
          });
        }
        config.emit({
          type: "text",
          scope: config.scope,
          text: answer,
          ...(live ? { streamed: true } : {}),
        });
      }
      const continuation = await seams.onStop(messages, response, run);
      if (continuation) {
        append({ role: "user", content: continuation }, "continuation");
        continue;
      }
      return { response, turns, stopped: "done" };
    }

    showProse(response, config, !live);
    if (live && streamed.text)
      config.emit({ type: "text", scope: config.scope, text: streamed.text, streamed: true });
    const round: CallOutcome[] = [];
    // A refused reply: every call gets the refusal, and no gate, hook or tool sees them.
    const refused = await seams.beforeCalls(response, run);
    // Set by a seam that halts the run: the calls after it are not run.
    let halt: string | undefined;
    // In the order the model asked; each call gets exactly one result.
    for (const block of calls) {
      const call = { id: block.id, name: block.name, input: block.input };
      run.workdir = workdirNow();
      const output: CallOutput =
        halt === undefined
          ? await runTool(call, config, run, seams, refused)
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

/**
 * Dynamic context reaches the model in the conversation, as Claude Code's system reminders
 * do (s15): a section the model has not seen in its current text is added as a reminder
 * block to the newest user message, the one about to be sent. Messages already sent and the
 * system prompt stay byte-identical, so the prompt cache keeps every earlier prefix.
 * A section is sent again when its text changes (the clock at a new minute) or when
 * compaction has dropped the message that carried it; one that is gone (a resumed run no
 * longer interrupted) is withdrawn with a reminder that names its first line.
 */
function remind(messages: MessageParam[], notes: PromptSection[]): void {
  const newest = messages.at(-1);
  if (newest?.role !== "user") return;
  const sent = delivered.get(messages) ?? new Map<string, string>();
  delivered.set(messages, sent);
  if (notes.length === 0 && sent.size === 0) return;
  const texts = new Set<string>();
  // The reminders still in the history (only user messages carry them).
  for (const message of messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "text" && block.text.startsWith(REMINDER_OPEN)) texts.add(block.text);
    }
  }
  const blocks: Anthropic.TextBlockParam[] = [];
  const reminder = (text: string) => `${REMINDER_OPEN}${text}\n</system-reminder>`;
  for (const note of notes) {
    const text = reminder(note.text);
    if (sent.get(note.id) === text && texts.has(text)) continue;
    sent.set(note.id, text);
    blocks.push({ type: "text", text });
  }
  for (const [id, text] of sent) {
    if (notes.some((note) => note.id === id)) continue;
    sent.delete(id);
    if (!texts.has(text)) continue; // compacted away: nothing left to withdraw
    const first = text.split("\n")[1] ?? "";
    blocks.push({ type: "text", text: reminder(`No longer current: ${first}`) });
  }
  if (blocks.length === 0) return;
  const content: Anthropic.ContentBlockParam[] =
    typeof newest.content === "string" ? [{ type: "text", text: newest.content }] : newest.content;
  newest.content = [...content, ...blocks];
}

const REMINDER_OPEN = "<system-reminder>\n";

/** The reminder each history was last sent per section id (remind). */
const delivered = new WeakMap<MessageParam[], Map<string, string>>();

/** A prompt built in parts, as the API takes it: the stable part, one block. */
function systemBlocks({ stable }: SystemParts): Anthropic.TextBlockParam[] {
  return stable ? [{ type: "text", text: stable }] : [];
}

/** The main agent's replies stream (s15): its text is printed as it arrives. */
function streams(config: LoopConfig, run: RunContext): boolean {
  return run.role === "main" && config.client.stream !== undefined;
}

function callModel(
  messages: MessageParam[],
  config: LoopConfig,
  run: RunContext,
  streamed: { text: string },
  overrides: CallOverrides | undefined,
  parts: SystemParts | null,
) {
  // Each call streams its own answer (a max_tokens redo calls again).
  streamed.text = "";
  const params = {
    model: config.model,
    max_tokens: overrides?.maxTokens ?? config.maxTokens ?? MAX_TOKENS,
    system: parts ? systemBlocks(parts) : run.system,
    messages,
    tools: toolSpecs(run.tools),
  };
  const options = { scope: config.scope, signal: run.signal };
  if (!streams(config, run) || !config.client.stream) return config.client.create(params, options);
  return config.client.stream(params, {
    ...options,
    onText: (text) => {
      streamed.text += text;
      config.emit({ type: "text_delta", scope: config.scope, text });
    },
  });
}

/** Runs one call; every failure becomes an is_error output, never an exception. */
async function runTool(
  call: ToolCall,
  config: LoopConfig,
  run: RunContext,
  seams: Required<LoopSeams>,
  refused: ToolOutput | null,
) {
  const started = performance.now();
  config.emit({ type: "tool_call", scope: config.scope, ...call });
  const output = refused ?? (await dispatch(call, run, seams));
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

async function dispatch(call: ToolCall, run: RunContext, seams: Required<LoopSeams>) {
  // An own-key Map: names such as `constructor` or `__proto__` are simply unknown.
  const tool = run.tools.get(call.name);
  if (!tool) {
    const available = [...run.tools.keys()].join(", ");
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
