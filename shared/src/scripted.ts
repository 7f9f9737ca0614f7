/**
 * The scripted model: a deterministic stand-in for Claude that drives the offline demos and the
 * tests. A script is a list of steps; each request to the fake server is answered by the first
 * step not yet used whose predicate accepts the request.
 *
 * Steps are matched by predicate rather than strictly in order because side calls (a summary,
 * a title) arrive in an order the test cannot always pin down. A step without a predicate
 * answers only main-loop calls, i.e. requests that offer tools.
 */
import type Anthropic from "@anthropic-ai/sdk";

export type ScriptedBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; name: string; input: Record<string, unknown>; id?: string };

export interface ScriptedUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export interface ScriptedReply {
  content: ScriptedBlock[];
  /** Default: "tool_use" when a tool_use block is present, else "end_turn". */
  stop_reason?: Anthropic.StopReason;
  /** Overrides the server's estimates; fields left out are estimated. */
  usage?: Partial<ScriptedUsage>;
}

/** An HTTP error answer, sent with the API's error envelope. */
export interface ScriptedError {
  fault: "error";
  status: number;
  /** The API's error type, e.g. "rate_limit_error", "overloaded_error". */
  type: string;
  message: string;
  /** Extra response headers, e.g. `{ "retry-after-ms": "1" }`. */
  headers?: Record<string, string>;
  /** Default false: the server sends `x-should-retry: false`; true sends `x-should-retry: true`. */
  retryable?: boolean;
}

/**
 * Close the socket without a complete answer. For a streaming request this happens after
 * `afterEvents` SSE events (default 2, i.e. mid-message); for a plain request before any byte
 * of the response is written.
 */
export interface ScriptedDrop {
  fault: "drop";
  afterEvents?: number;
}

export type ScriptedAnswer = ScriptedReply | ScriptedError | ScriptedDrop;

/** The parsed JSON body of a Messages API request. */
export type MessageRequest = Anthropic.MessageCreateParams;

export interface ScriptStep {
  /** Shown in failure messages and handy when reading a script. */
  name?: string;
  /** Which requests this step answers; without it, only requests that offer tools. */
  when?: (req: MessageRequest) => boolean;
  reply: ScriptedAnswer | ((req: MessageRequest) => ScriptedAnswer);
  /**
   * Answers every request it matches and is never used up: a stand-in that replies from the
   * request's content (s16's workflow agents, whose number and order a script decides).
   */
  repeat?: boolean;
}

/** The answer to a request no step matched when the request offers tools. */
export const NO_STEP_LEFT_TEXT = "(scripted model: no step left for this request)";
/** The answer to a side call (no tools) no step matched: an empty JSON list. */
export const SIDE_CALL_DEFAULT_TEXT = "[]";

const TOOL_ID_SUFFIX_LENGTH = 24;

/** True when the request offers at least one tool, i.e. it is a main-loop call. */
export function offersTools(req: MessageRequest): boolean {
  const tools: unknown = (req as { tools?: unknown }).tools;
  return Array.isArray(tools) && tools.length > 0;
}

export function isScriptedError(answer: ScriptedAnswer): answer is ScriptedError {
  return "fault" in answer && answer.fault === "error";
}

export function isScriptedDrop(answer: ScriptedAnswer): answer is ScriptedDrop {
  return "fault" in answer && answer.fault === "drop";
}

export function isScriptedReply(answer: ScriptedAnswer): answer is ScriptedReply {
  return !("fault" in answer);
}

/** The stop reason a reply ends with: its own, else "tool_use" if it calls a tool, else "end_turn". */
export function stopReasonOf(reply: ScriptedReply): Anthropic.StopReason {
  if (reply.stop_reason !== undefined) return reply.stop_reason;
  return reply.content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
}

/**
 * Makes tool-use ids shaped like the API's: `toolu_` followed by 24 characters from
 * [A-Za-z0-9]. Counter-based, so a given script yields the same ids on every run, and unique
 * for the life of the generator. `tag` (letters only) tells ids from different sources apart.
 */
export function toolUseIdGenerator(tag: string): () => string {
  const prefix = `01${tag.replace(/[^A-Za-z]/g, "")}`.slice(0, 12);
  const width = TOOL_ID_SUFFIX_LENGTH - prefix.length;
  let counter = 0;
  return () => {
    counter += 1;
    return `toolu_${prefix}${String(counter).padStart(width, "0")}`;
  };
}

/** A copy of `reply` in which every tool_use block has an id, taken from `nextId` where missing. */
export function withToolUseIds(reply: ScriptedReply, nextId: () => string): ScriptedReply {
  return {
    ...reply,
    content: reply.content.map((block) =>
      block.type === "tool_use" && block.id === undefined ? { ...block, id: nextId() } : block,
    ),
  };
}

export class ScriptedModel {
  /** Requests no step matched, which got a default answer. */
  readonly unmatched: MessageRequest[] = [];
  private readonly steps: ScriptStep[];
  private readonly used: boolean[];
  private readonly nextToolUseId = toolUseIdGenerator("Scripted");

  constructor(steps: ScriptStep[]) {
    this.steps = [...steps];
    this.used = this.steps.map(() => false);
  }

  /** Steps not yet consumed (a repeating step never is, and is not counted). */
  get remaining(): number {
    return this.steps.filter((step, i) => !this.used[i] && !step.repeat).length;
  }

  /** Names (or indexes) of the steps not yet consumed, for failure messages. */
  get pending(): string[] {
    return this.steps.flatMap((step, i) =>
      this.used[i] || step.repeat ? [] : [step.name ?? `step ${i}`],
    );
  }

  /** Answers `req` with the first unconsumed step that matches it, and consumes that step. */
  answer(sent: MessageRequest): ScriptedAnswer {
    const req = modelView(sent);
    for (let i = 0; i < this.steps.length; i++) {
      if (this.used[i]) continue;
      const step = this.steps[i]!;
      const matches = step.when ? step.when(req) : offersTools(req);
      if (!matches) continue;
      if (!step.repeat) this.used[i] = true;
      const answer = typeof step.reply === "function" ? step.reply(req) : step.reply;
      return isScriptedReply(answer) ? withToolUseIds(answer, this.nextToolUseId) : answer;
    }
    this.unmatched.push(req);
    if (offersTools(req)) {
      return { content: [text(NO_STEP_LEFT_TEXT)], stop_reason: "end_turn" };
    }
    return { content: [text(SIDE_CALL_DEFAULT_TEXT)] };
  }
}

export function text(t: string): ScriptedBlock {
  return { type: "text", text: t };
}

export function thinking(t: string): ScriptedBlock {
  return { type: "thinking", thinking: t };
}

export function toolUse(name: string, input: Record<string, unknown>, id?: string): ScriptedBlock {
  return id === undefined
    ? { type: "tool_use", name, input }
    : { type: "tool_use", name, input, id };
}

export function reply(...blocks: ScriptedBlock[]): ScriptedReply {
  return { content: blocks };
}

export function apiError(
  status: number,
  type: string,
  message: string,
  opts?: { retryable?: boolean; headers?: Record<string, string> },
): ScriptedError {
  const error: ScriptedError = { fault: "error", status, type, message };
  if (opts?.retryable !== undefined) error.retryable = opts.retryable;
  if (opts?.headers !== undefined) error.headers = { ...opts.headers };
  return error;
}

/** A system reminder block (s15): dynamic context the loop adds to the newest user message. */
function isReminder(block: unknown): block is { type: "text"; text: string } {
  return (
    typeof block === "object" &&
    block !== null &&
    (block as { type?: unknown }).type === "text" &&
    String((block as { text?: unknown }).text).startsWith("<system-reminder>\n")
  );
}

/** The section a reminder block carries. */
function reminderText(block: { text: string }): string {
  return block.text.slice("<system-reminder>\n".length, -"\n</system-reminder>".length);
}

/**
 * A request as the model is told it, whatever the channel: from s15 the dynamic sections
 * travel as reminders in the conversation; this view puts every distinct one, in order,
 * back after the system prompt (as chapters before s15 send them) and takes them out of
 * the messages, a typed line becoming its text again. Requests without reminders are
 * returned as they are. A scripted model answers this view, so one script serves every
 * chapter.
 */
export function modelView<T extends MessageRequest>(request: T): T {
  const notes: string[] = [];
  let found = false;
  const messages = request.messages.map((message) => {
    if (typeof message.content === "string" || !message.content.some(isReminder)) return message;
    found = true;
    for (const block of message.content) {
      if (!isReminder(block)) continue;
      const text = reminderText(block);
      const withdrawn = /^No longer current: (.*)$/.exec(text)?.[1];
      if (withdrawn !== undefined) {
        const at = notes.findIndex((note) => note.split("\n")[0] === withdrawn);
        if (at >= 0) notes.splice(at, 1);
      } else if (!notes.includes(text)) notes.push(text);
    }
    const rest = message.content.filter((block) => !isReminder(block));
    const only = rest.length === 1 && rest[0]!.type === "text" ? rest[0]!.text : null;
    return { ...message, content: only ?? rest };
  });
  if (!found) return request;
  const system = typeof request.system === "string" ? request.system : "";
  return { ...request, system: [system, ...notes].filter(Boolean).join("\n\n"), messages };
}
