/**
 * What the session spends (s15), starting with spending less: prompt caching. Every model
 * call goes out with cache breakpoints (`cache_control`), at most four per request, the
 * API's limit:
 *
 *   system    [stable sections ◆][dynamic sections]
 *   messages  … [a block ◆] [the newest message]        ◆ = a breakpoint: the prefix up to
 *                                                           it is cached, and a later request
 *                                                           that repeats it reads it back
 *
 * The loop sends a prompt built in parts as two blocks, the stable sections first
 * (prompt.ts); the breakpoint goes on that first block, so the system part is read back on
 * every call after the first. A prompt sent as one text is cached whole. The second breakpoint goes on the newest message's
 * last block, or, when that message is plain text (a typed line), on the last block before
 * it: the conversation so far is then read back on the next round. The usage line shows the
 * cache's reads and writes.
 *
 * Then, what it cost: a dated local price table per model (input, output, 5-minute cache
 * write, cache read, in dollars per million tokens). The usage line ends with the turn's
 * price, `/cost` prints the session's totals and so does the end of the session; a model
 * not in the table is counted in tokens only. `/context` shows what the next request would
 * carry: the system prompt (its stable part; the dynamic sections go as reminders in the
 * messages), the tools and the messages, by size.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  formatCost,
  type MessageParams,
  type ModelClient,
  toolSpecs,
  type UsageMeter,
  type UsageNumbers,
} from "shared";
import type { Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import type { SystemParts } from "./prompt.ts";

type MessageParam = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;

/** The API's limit of blocks with cache_control in one request. */
export const MAX_CACHE_BREAKPOINTS = 4;
const EPHEMERAL = { type: "ephemeral" } as const;

const marked = (value: unknown) =>
  typeof value === "object" && value !== null && "cache_control" in value && !!value.cache_control;

/** Breakpoints `params` already carries (system blocks, tools, message blocks). */
function marks(params: MessageParams): number {
  let count = Array.isArray(params.system) ? params.system.filter(marked).length : 0;
  if (params.tools) count += marksIn(params.tools);
  for (const message of params.messages)
    if (typeof message.content !== "string") count += marksIn(message.content);
  return count;
}

/** Breakpoints per list of blocks, counted once while the list lives (a history only grows). */
const counted = new WeakMap<readonly unknown[], number>();

/**
 * The breakpoints in one list. Mechanisms give a message new content rather than editing its
 * blocks in place, and the tools come as one list per tool map, so a list counted is known.
 */
function marksIn(blocks: readonly unknown[]): number {
  let count = counted.get(blocks);
  if (count === undefined) {
    count = blocks.filter(marked).length;
    counted.set(blocks, count);
  }
  return count;
}

/** The system prompt with a breakpoint on its first block: the stable part, or all of it. */
function markSystem(system: string | Anthropic.TextBlockParam[]): Anthropic.TextBlockParam[] {
  const blocks: Anthropic.TextBlockParam[] =
    typeof system === "string" ? [{ type: "text", text: system }] : system;
  const [first, ...rest] = blocks;
  return first ? [{ ...first, cache_control: EPHEMERAL }, ...rest] : blocks;
}

/** The messages with a breakpoint on the last block that can carry one (copies only). */
function markConversation(messages: MessageParam[]): MessageParam[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    // A plain-text message stays as it is; the breakpoint goes on the block before it.
    if (typeof message.content === "string") continue;
    const end = message.content.at(-1);
    // Thinking blocks take no cache_control.
    if (!end || end.type === "thinking" || end.type === "redacted_thinking") return messages;
    const content = [
      ...message.content.slice(0, -1),
      { ...end, cache_control: EPHEMERAL } as Block,
    ];
    return [
      ...messages.slice(0, i),
      { ...message, content } as MessageParam,
      ...messages.slice(i + 1),
    ];
  }
  return messages;
}

/** `params` with the system and conversation breakpoints, within the API's limit of four. */
export function withCacheBreakpoints(params: MessageParams): MessageParams {
  let room = MAX_CACHE_BREAKPOINTS - marks(params);
  let system = params.system;
  const unmarked = typeof system === "string" ? system !== "" : !!system && !system.some(marked);
  if (system !== undefined && unmarked && room > 0) {
    system = markSystem(system);
    room--;
  }
  const messages = room > 0 ? markConversation(params.messages) : params.messages;
  return { ...params, ...(system === undefined ? {} : { system }), messages };
}

/** Every call of `client` with cache breakpoints. */
export function cachingClient(client: ModelClient): ModelClient {
  const stream = client.stream?.bind(client);
  return {
    create: (params, options) => client.create(withCacheBreakpoints(params), options),
    ...(stream
      ? { stream: (params, options) => stream(withCacheBreakpoints(params), options) }
      : {}),
  };
}

export interface Price {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

/** When the table below was checked against platform.claude.com/docs/en/about-claude/pricing. */
export const PRICES_AS_OF = "2026-12-01";
/**
 * Dollars per million tokens, by model id prefix (the first that matches wins, so a dated
 * id such as claude-haiku-4-5-20251001 finds its family). Cache writes are the 5-minute kind.
 */
export const PRICES: Array<[prefix: string, price: Price]> = [
  ["claude-opus-4-1", { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 }],
  ["claude-opus-4-0", { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 }],
  ["claude-opus-4-20250514", { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 }],
  ["claude-opus-4", { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 }],
  ["claude-opus-5", { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 }],
  ["claude-sonnet-4", { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 }],
  ["claude-sonnet-5", { input: 2, output: 10, cacheWrite: 2.5, cacheRead: 0.2 }],
  ["claude-haiku-4-5", { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 }],
];

export function priceOf(model: string): Price | null {
  return PRICES.find(([prefix]) => model.startsWith(prefix))?.[1] ?? null;
}

/** What `numbers` tokens of `model` cost in dollars, or null for a model not in the table. */
export function dollars(model: string, numbers: UsageNumbers): number | null {
  const price = priceOf(model);
  if (!price) return null;
  const perToken = (rate: number, tokens: number) => (rate * tokens) / 1_000_000;
  return (
    perToken(price.input, numbers.input) +
    perToken(price.output, numbers.output) +
    perToken(price.cacheWrite, numbers.cacheWrite) +
    perToken(price.cacheRead, numbers.cacheRead)
  );
}

/** The session's totals, every scope (teammates included), as `/cost` and the exit show them. */
export function sessionCostLine(usage: UsageMeter): string {
  const total = usage.sessionTotals();
  let line = `[cost] session: in ${total.input} / out ${total.output} tokens`;
  const calls = `${total.calls} call${total.calls === 1 ? "" : "s"}`;
  line += `, cache read ${total.cacheRead}, cache write ${total.cacheWrite} (${calls})`;
  const cost = usage.cost("session");
  if (cost) line += formatCost(cost);
  return `${line}; prices as of ${PRICES_AS_OF}`;
}

/** Characters per token, roughly, for English text and JSON (what `/context` estimates with). */
const CHARS_PER_TOKEN = 4;

/** `/context`: what the next request would carry, by part and by size. */
export function describeContext(
  parts: SystemParts,
  tools: Anthropic.Tool[],
  history: MessageParam[],
): string {
  const size = (value: unknown) =>
    (typeof value === "string" ? value : JSON.stringify(value)).length;
  // The system prompt is the stable part; the dynamic sections ride in the messages.
  const stable = parts.stable.length;
  const dynamic = parts.notes.reduce((sum, note) => sum + note.text.length, 0);
  const toolChars = tools.map((tool) => [tool.name, size(tool)] as const);
  const largest = [...toolChars].sort((a, b) => b[1] - a[1]).slice(0, 3);
  const kinds = new Map<string, { count: number; chars: number }>();
  for (const message of history) {
    const results =
      typeof message.content !== "string" &&
      message.content.some((block) => block.type === "tool_result");
    const kind = results ? "tool results" : message.role;
    const entry = kinds.get(kind) ?? { count: 0, chars: 0 };
    entry.count++;
    entry.chars += size(message.content);
    kinds.set(kind, entry);
  }
  const toolTotal = toolChars.reduce((sum, [, chars]) => sum + chars, 0);
  const messageTotal = [...kinds.values()].reduce((sum, kind) => sum + kind.chars, 0);
  const total = stable + toolTotal + messageTotal;
  const kindText = [...kinds].map(([kind, { count, chars }]) => `${kind} ${count} (${chars})`);
  return [
    `[context] the next request would carry about ${Math.ceil(total / CHARS_PER_TOKEN)} tokens (${total} characters):`,
    `  system prompt  ${stable} chars (dynamic sections ${dynamic} chars, sent as reminders)`,
    `  tools (${tools.length})  ${toolTotal} chars; largest: ${largest.map(([name, chars]) => `${name} ${chars}`).join(", ")}`,
    `  messages (${history.length})  ${messageTotal} chars${kindText.length ? `: ${kindText.join(", ")}` : ""}`,
  ].join("\n");
}

export function costMechanism(harness: Pick<Harness, "usage" | "printer" | "agent">): Mechanism {
  harness.usage.pricing = dollars;
  return {
    name: "cost",
    extendClient: (client) => cachingClient(client),
    commands: {
      cost: {
        description: "the session's tokens and what they cost",
        run: async () => {
          harness.printer.line(sessionCostLine(harness.usage));
          return undefined;
        },
      },
      context: {
        description: "what the next request would carry: system prompt, tools, messages",
        run: async (_args, { history }) => {
          const setup = harness.agent("main", "main");
          harness.printer.line(describeContext(setup.parts, toolSpecs(setup.tools), history));
          return undefined;
        },
      },
    },
    close: () => {
      if (harness.usage.sessionTotals().calls > 0) {
        harness.printer.line(sessionCostLine(harness.usage), "dim");
      }
    },
  };
}
