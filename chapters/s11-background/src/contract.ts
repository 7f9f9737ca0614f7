/**
 * The contract: everything a mechanism may rely on, and nothing else. Mechanisms meet the
 * loop, the REPL and each other only through what this file declares: the context of a
 * loop run, the seams of the loop, the steps of a turn, and the `Mechanism` shape with the
 * rules that join a list of them. A chapter that needs a new seam, field or member adds it
 * here, so the growth of the contract shows in that chapter's diff.
 *
 * How several mechanisms on one spot combine:
 *
 *   tools            every mechanism's in list order, then each `extendTool` over all of them
 *   commands         every mechanism's; two with one name is a mistake in main.ts, except
 *                    that a command from a file (`file`) yields to one a mechanism defines
 *   sources          one per event kind; a second of one kind is a mistake in main.ts
 *   close            every mechanism's, in list order, even after one throws
 *   beforeModelCall  each in list order, one after the other
 *   aroundModelCall  nested in list order: the first is outermost; each gets `next`
 *   reviewToolCall   in list order, each given the call the previous handed on, until one
 *                    refuses it; every review runs before the first beforeToolCall
 *   beforeToolCall   in list order until one refuses the call; that refusal is the result
 *   afterToolCall    in list order, each given the output the previous one returned
 *   afterResults     the text blocks of all of them, concatenated in list order
 *   afterBatch       each in list order
 *   onStop           in list order until one answers; its text continues the loop
 *   onAppend         every listener, in list order
 *
 * docs/architecture.md has the whole picture.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Tone, ToolContext, ToolDefinition, ToolMap, ToolOutput } from "shared";
import type { PromptSection } from "./prompt.ts";

type Message = Anthropic.Message;
type MessageParam = Anthropic.MessageParam;

// --- A loop run -------------------------------------------------------------------------

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
  /** A review's word on this call, for the gates (reviewToolCall); absent: none. */
  verdict?: Verdict;
}

/**
 * What a review (a PreToolUse hook) says about running a call: "allow" runs it without
 * asking the user, "ask" asks even when nothing else would. The gates keep the last word
 * on what they refuse outright.
 */
export interface Verdict {
  decision: "allow" | "ask";
  /** Who gave it, as the user reads it: `PreToolUse hook (./check.sh)`. */
  by: string;
  /** Why, for the user (never the model). */
  reason?: string;
}

/**
 * A seam's output for a call. `halt` also ends the run once the round's results are in
 * (the loop returns `stopped: "halted"`): the reason, for the user.
 */
export type CallOutput = ToolOutput & { halt?: string };

/** What a review decided: refuse the call, or hand on the call to judge and run. */
export type Review = { refuse: CallOutput } | { call: ToolCall };

/** Which kind of agent runs a loop: the one at the prompt, or a subagent it started. */
export type Role = "main" | "subagent";

/** What started the turn. So far only a typed line does. */
export type TurnKind = "user";

/**
 * Who put a message into the history, so one mechanism can tell another's messages apart
 * without matching their text: the turn's `input`, the `model`, a round's `tool_results`
 * (and what rides with them), a `continuation` an `onStop` seam asked for, a `compaction`
 * summary or marker, a `notification` message.
 */
export type Origin =
  | "input"
  | "model"
  | "tool_results"
  | "continuation"
  | "compaction"
  | "notification";

const origins = new WeakMap<MessageParam, Origin>();

/** Records who made `message` (the loop tags what it appends; mechanisms tag their own). */
export function tagOrigin(message: MessageParam, origin: Origin): MessageParam {
  origins.set(message, origin);
  return message;
}

/** Who made `message`, or undefined for a message nobody tagged. */
export function originOf(message: MessageParam): Origin | undefined {
  return origins.get(message);
}

/**
 * What every seam and every tool call of one loop run is told. Mechanisms read it; only the
 * loop writes it.
 */
export interface RunContext extends Readonly<ToolContext> {
  readonly role: Role;
  readonly turn: TurnKind;
  /** The active request: what this run works on (the typed line, for a user turn). */
  readonly request: string;
  /** The system prompt of the coming (or current) model call. */
  readonly system: string;
  readonly tools: ToolMap;
}

/** One call of a round and what came of it (a refusal is an outcome too). */
export interface CallOutcome {
  call: ToolCall;
  output: ToolOutput;
}

/** How a run of the loop ended. */
export interface LoopResult {
  /** The last reply: the final answer, unless the turn cap or a halt stopped the loop. */
  response: Message;
  turns: number;
  stopped: "done" | "max_turns" | "halted";
}

// --- The loop's seams -------------------------------------------------------------------

/** The places mechanisms plug into the loop. Each is optional; the header has the rules. */
export interface LoopSeams {
  /** Before each model call; may rewrite the history in place. */
  beforeModelCall?(messages: MessageParam[], run: RunContext): Promise<void>;
  /**
   * Wraps each model call. `next` runs the wrappers inside this one and then the call; a
   * wrapper may rewrite the history in place before calling it, or call it again.
   */
  aroundModelCall?(
    next: () => Promise<Message>,
    messages: MessageParam[],
    run: RunContext,
  ): Promise<Message>;
  /**
   * Before the gates, after the input parsed: refuse the call, or hand it on, the same or
   * with a new input (parsed again) or a verdict the gates honour.
   */
  reviewToolCall?(call: ToolCall, run: RunContext): Promise<Review>;
  /** Before each tool call, after its review: an output refuses the call (nothing runs). */
  beforeToolCall?(call: ToolCall, run: RunContext): Promise<CallOutput | null>;
  /** After each tool call that ran; returns the output to keep (the same one, or a new one). */
  afterToolCall?(call: ToolCall, output: ToolOutput, run: RunContext): Promise<CallOutput>;
  /** After a round's calls all have an outcome: text blocks to put after every tool_result. */
  afterResults?(round: CallOutcome[], run: RunContext): Anthropic.TextBlockParam[];
  /** After a round's results message was appended. */
  afterBatch?(messages: MessageParam[], run: RunContext): Promise<void>;
  /** At the no-tool_use exit: text continues the loop as a new user message; null lets it end. */
  onStop?(messages: MessageParam[], response: Message, run: RunContext): Promise<string | null>;
  /** Every message appended to the history, with who made it. */
  onAppend?(message: MessageParam, origin: Origin, run: RunContext): void;
}

/** One `LoopSeams` that runs a list of them by the rules in this file's header. */
export function composeSeams(list: LoopSeams[]): Required<LoopSeams> {
  const all = <K extends keyof LoopSeams>(key: K) =>
    list.flatMap((seams) => (seams[key] ? [seams] : [])) as Array<Required<Pick<LoopSeams, K>>>;
  const before = all("beforeModelCall");
  const around = all("aroundModelCall");
  const reviews = all("reviewToolCall");
  const gates = all("beforeToolCall");
  const after = all("afterToolCall");
  const extras = all("afterResults");
  const batches = all("afterBatch");
  const stops = all("onStop");
  const listeners = all("onAppend");
  return {
    async beforeModelCall(messages, run) {
      for (const seams of before) await seams.beforeModelCall(messages, run);
    },
    aroundModelCall(call, messages, run) {
      // Built from the inside out, so the first in the list ends up outermost.
      const chain = around.reduceRight<() => Promise<Message>>(
        (next, seams) => () => seams.aroundModelCall(next, messages, run),
        call,
      );
      return chain();
    },
    async reviewToolCall(toolCall, run) {
      let review: Review = { call: toolCall };
      for (const seams of reviews) {
        if ("refuse" in review) break;
        review = await seams.reviewToolCall(review.call, run);
      }
      return review;
    },
    async beforeToolCall(toolCall, run) {
      for (const seams of gates) {
        const refusal = await seams.beforeToolCall(toolCall, run);
        if (refusal) return refusal;
      }
      return null;
    },
    async afterToolCall(toolCall, output, run) {
      let kept: CallOutput = output;
      for (const seams of after) kept = await seams.afterToolCall(toolCall, kept, run);
      return kept;
    },
    afterResults(round, run) {
      return extras.flatMap((seams) => seams.afterResults(round, run));
    },
    async afterBatch(messages, run) {
      for (const seams of batches) await seams.afterBatch(messages, run);
    },
    async onStop(messages, response, run) {
      for (const seams of stops) {
        const answer = await seams.onStop(messages, response, run);
        if (answer) return answer;
      }
      return null;
    },
    onAppend(message, origin, run) {
      for (const seams of listeners) seams.onAppend(message, origin, run);
    },
  };
}

// --- A turn of the REPL -----------------------------------------------------------------

/** What starts a turn: its kind, its active request and its first user message's content. */
export interface TurnInput {
  kind: TurnKind;
  /** What the turn works on: the typed line, for a user turn. */
  request: string;
  content: string | Anthropic.ContentBlockParam[];
}

/** A turn in progress: its input, the history (already holding the input) and its signal. */
export interface Turn extends TurnInput {
  history: MessageParam[];
  signal: AbortSignal;
}

/** The turn lifecycle seams. Several mechanisms' hooks run in list order. */
export interface TurnHooks {
  /** User turns only: the input to run (rewritten or not), or null to drop the line. */
  prepare?(input: TurnInput): Promise<TurnInput | null>;
  beforeTurn?(turn: Turn): Promise<void>;
  /** After the answer was printed; not after an error or an interrupt. */
  afterTurn?(turn: Turn, result: LoopResult): Promise<void>;
}

/** What a slash command may use. */
export interface CommandContext {
  history: MessageParam[];
  /** The active request of the last turn ("" before the first). */
  request: string;
  signal: AbortSignal;
}

export interface SlashCommand {
  description: string;
  /** What its arguments are, for /help (`[message]`). */
  hint?: string;
  /**
   * The file a user's command comes from (`.claude/commands/x.md`): it yields to a command a
   * mechanism defines with the same name, and the clash is reported.
   */
  file?: string;
  /** May return a turn to run next (a command that starts work). */
  run(args: string, context: CommandContext): Promise<TurnInput | undefined>;
}

/** A source of REPL events other than typed lines (timers, inboxes, finished jobs). */
export interface EventSource {
  /** The event kind this source pushes and handles. */
  kind: string;
  /** Called once when the REPL starts; `push` queues an event of this kind. */
  start?(push: (text: string) => void): void;
  /** A dequeued event of this kind: the turn to run, or null when there is nothing to do. */
  turn(text: string): Promise<TurnInput | null>;
}

// --- Mechanisms -------------------------------------------------------------------------

/** One line of the start-up banner. */
export interface BannerLine {
  text: string;
  tone?: Tone;
}

/** Who a loop run is for: its role, and the scope its lines and log records carry. */
export interface LoopRun {
  role: Role;
  scope: string;
}

/**
 * What one mechanism adds to the harness, every part optional. Each mechanism file exports
 * one factory that returns it, and `main.ts` lists them in order.
 */
export interface Mechanism {
  /** A short name for logs: "shell", "permissions", "memory" … */
  name: string;
  /** The tools an agent of `role` gets from this mechanism, in the order the model sees them. */
  tools?(role: Role): ToolDefinition[];
  /**
   * Extends a tool an earlier mechanism gives: same name, same place in the list. Called for
   * every tool of the agent; return the tool as it is to leave it alone.
   */
  extendTool?(tool: ToolDefinition, role: Role): ToolDefinition;
  /** Its system prompt sections for an agent of `role` (stable ones first, dynamic last). */
  sections?(role: Role): PromptSection[];
  /** Its loop seams for one run of the loop (called as each run starts, so state starts fresh). */
  loop?(run: LoopRun): LoopSeams | null;
  /** Slash commands, by name without the `/`. */
  commands?: Record<string, SlashCommand>;
  /** Called once before the first prompt: its lines for the banner. */
  start?(): BannerLine[];
  /** The main agent's turn lifecycle: prepare, before and after each turn. */
  turn?: TurnHooks;
  /** Event sources for the REPL's queue (timers, inboxes, finished jobs). */
  sources?: EventSource[];
  /** Called once when the session ends: stop timers, end child processes, release locks. */
  close?(): void | Promise<void>;
}

/**
 * The tools of an agent of `role`: every mechanism's, in list order, then each mechanism's
 * `extendTool` applied to all of them, also in list order.
 */
export function gatherTools(mechanisms: Mechanism[], role: Role): ToolDefinition[] {
  let tools = mechanisms.flatMap((mechanism) => mechanism.tools?.(role) ?? []);
  for (const mechanism of mechanisms) {
    const extend = mechanism.extendTool?.bind(mechanism);
    if (extend) tools = tools.map((tool) => extend(tool, role));
  }
  return tools;
}

/**
 * Every mechanism's slash commands; two with one name is a mistake in main.ts. Commands
 * from files come after, and one whose name is taken goes to `shadowed` instead.
 */
export function commandsOf(
  mechanisms: Mechanism[],
  shadowed: (name: string, file: string) => void = () => {},
): Map<string, SlashCommand> {
  const commands = new Map<string, SlashCommand>();
  const all = mechanisms.flatMap((mechanism) => Object.entries(mechanism.commands ?? {}));
  for (const [name, command] of all.filter(([, command]) => command.file === undefined)) {
    if (commands.has(name)) throw new Error(`two mechanisms define /${name}`);
    commands.set(name, command);
  }
  for (const [name, command] of all.filter(([, command]) => command.file !== undefined)) {
    if (commands.has(name)) shadowed(name, command.file!);
    else commands.set(name, command);
  }
  return commands;
}

/**
 * The event sources by kind, in list order. A second source of one kind is a mistake in
 * main.ts, as a second tool of one name is: the REPL could hand that kind to one only.
 */
export function sourcesByKind(sources: EventSource[]): Map<string, EventSource> {
  const byKind = new Map<string, EventSource>();
  for (const source of sources) {
    if (byKind.has(source.kind)) throw new Error(`two event sources of kind '${source.kind}'`);
    byKind.set(source.kind, source);
  }
  return byKind;
}

/**
 * Closes every mechanism at the end of the session, in list order. One whose `close` throws
 * does not keep the later ones from closing (they may hold child processes or locks): what
 * it threw goes to `report`, and the next one closes.
 */
export async function closeAll(
  mechanisms: Mechanism[],
  report: (mechanism: string, error: unknown) => void,
): Promise<void> {
  for (const mechanism of mechanisms) {
    try {
      await mechanism.close?.();
    } catch (error) {
      report(mechanism.name, error);
    }
  }
}
