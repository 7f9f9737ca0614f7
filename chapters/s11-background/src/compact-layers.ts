/**
 * The cheap layers of compaction (s08), L1–L3: no API call, nothing the model wrote is
 * lost (what leaves the history is on disk first). compact.ts runs them in the order
 * L3, L1, L2 before every model call, then decides whether L4 must summarise.
 *
 *   L3 budget   large results of the newest batch move to files; a preview stays
 *   L1 snip     past the maximum, archive and keep a head, a marker and a tail
 *   L2 micro    old tool results the model has already seen become placeholders
 *
 * None of them ever separates a tool_use from its tool_result.
 */
import { randomBytes } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import {
  ConfigError,
  type Env,
  harnessPath,
  logStamp,
  positiveIntVar,
  writeFileAtomic,
} from "shared";
import { tagOrigin } from "./contract.ts";

type MessageParam = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;
type ToolResult = Anthropic.ToolResultBlockParam;

/** The layers' limits, in characters of compact JSON unless said otherwise. */
export interface CompactLimits {
  /** L4: summarise when the request (history + system prompt + tools) is larger. */
  contextLimit: number;
  /** L3: every result of the newest batch larger than this goes to a file. */
  persistThreshold: number;
  /** L3: then the newest batch must fit this, largest results first. */
  batchBudget: number;
  /** L2: the last N results the model has seen stay whole. */
  keepRecent: number;
  /** L2: results this short are left alone. */
  microMinLength: number;
  /** L1: snip when the history has more messages than this… */
  snipMaxMessages: number;
  /** L1: …down to this many (hysteresis: snips stay rare and the prompt cache survives). */
  snipTargetMessages: number;
  /** L1: messages kept at the start. */
  snipKeepHead: number;
  /** L4: the summary call sees at most this much of the history. */
  summaryInputLimit: number;
}

export const DEFAULT_LIMITS: CompactLimits = {
  contextLimit: 150_000,
  persistThreshold: 30_000,
  batchBudget: 200_000,
  keepRecent: 3,
  microMinLength: 120,
  snipMaxMessages: 50,
  snipTargetMessages: 30,
  snipKeepHead: 3,
  summaryInputLimit: 80_000,
};
/** The environment variables that override the limits (for experiments, tests, the demo). */
export const LIMIT_VARIABLES: Record<keyof CompactLimits, string> = {
  contextLimit: "L4_COMPACT_CONTEXT_LIMIT",
  persistThreshold: "L3_COMPACT_PERSIST_THRESHOLD",
  batchBudget: "L3_COMPACT_TOOL_RESULT_BUDGET",
  keepRecent: "L2_COMPACT_KEEP_RECENT",
  microMinLength: "L2_COMPACT_MICRO_MIN_LENGTH",
  snipMaxMessages: "L1_COMPACT_SNIP_MAX_MESSAGES",
  snipTargetMessages: "L1_COMPACT_SNIP_TARGET_MESSAGES",
  snipKeepHead: "L1_COMPACT_SNIP_KEEP_HEAD",
  summaryInputLimit: "L4_COMPACT_SUMMARY_INPUT_LIMIT",
};
/** Characters of a persisted output shown in its stub. */
export const PREVIEW_CHARS = 2_000;
/** The limits from the environment: a value that is not a positive integer is fatal. */
export function limitsFromEnv(env: Env): CompactLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(LIMIT_VARIABLES) as Array<keyof CompactLimits>) {
    limits[key] = positiveIntVar(env, LIMIT_VARIABLES[key], DEFAULT_LIMITS[key]);
  }
  if (limits.snipKeepHead + 2 > limits.snipTargetMessages) {
    // The head, the marker and at least one message of the tail must fit the target.
    throw new ConfigError(
      `${LIMIT_VARIABLES.snipKeepHead} must leave room for the marker and the tail: at most ` +
        `${LIMIT_VARIABLES.snipTargetMessages} - 2 (got ${limits.snipKeepHead} and ${limits.snipTargetMessages})`,
    );
  }
  if (limits.snipTargetMessages < 5 || limits.snipTargetMessages >= limits.snipMaxMessages) {
    throw new ConfigError(
      `${LIMIT_VARIABLES.snipTargetMessages} must be at least 5 and below ` +
        `${LIMIT_VARIABLES.snipMaxMessages} (got ${limits.snipTargetMessages} and ${limits.snipMaxMessages})`,
    );
  }
  return limits;
}

export const MICRO_PLACEHOLDER = "[Earlier tool result compacted. Re-run if needed.]";

/** What a layer needs: the limits, the workspace, a way to report and to archive. */
export interface LayerContext {
  limits: CompactLimits;
  workdir: string;
  /** Prints and logs one `[compact …]` line. */
  say(text: string): void;
  /** Writes the whole history to .harness/transcripts/ and returns the file's path. */
  archive(messages: MessageParam[]): string;
}

/** L3: the newest batch's large results go to files, replaced by a stub with a preview. */
export function budget(messages: MessageParam[], context: LayerContext): MessageParam[] {
  // The newest batch's results: the message right after the last reply (a notification
  // message may follow it).
  const at = messages.findLastIndex((m) => m.role === "assistant") + 1;
  const last = messages[at];
  if (last?.role !== "user" || typeof last.content === "string") return messages;
  const { persistThreshold, batchBudget } = context.limits;
  const blocks = [...last.content];
  const sizes = () =>
    blocks.reduce((sum, b) => sum + (b.type === "tool_result" ? resultLength(b) : 0), 0);
  const before = sizes();
  let persisted = 0;
  const persist = (index: number) => {
    const block = blocks[index] as ToolResult;
    blocks[index] = {
      ...block,
      content: persistOutput(context.workdir, block.tool_use_id, resultText(block)),
    };
    persisted++;
  };
  blocks.forEach((block, i) => {
    if (block.type === "tool_result" && resultLength(block) > persistThreshold) persist(i);
  });
  // Still over budget: the largest remaining results follow until the batch fits.
  const order = blocks
    .map((block, i) => ({ block, i }))
    .filter(({ block }) => block.type === "tool_result" && !isStub(resultText(block as ToolResult)))
    .sort((a, b) => resultLength(b.block as ToolResult) - resultLength(a.block as ToolResult));
  for (const { i } of order) {
    if (sizes() <= batchBudget) break;
    persist(i);
  }
  if (persisted === 0) return messages;
  context.say(`[compact L3] ${persisted} result(s) persisted (${before} → ${sizes()} chars)`);
  return [...messages.slice(0, at), { role: "user", content: blocks }, ...messages.slice(at + 1)];
}

/** Writes one output under .harness/tool-results/ and returns the stub that replaces it. */
export function persistOutput(workdir: string, toolUseId: string, output: string): string {
  const file = harnessPath(
    workdir,
    "tool-results",
    `${logStamp(new Date())}-${randomBytes(3).toString("hex")}-${safeId(toolUseId)}.txt`,
  );
  writeFileAtomic(file, output);
  return [
    "<persisted-output>",
    `Full output: ${file}`,
    "Preview:",
    output.slice(0, PREVIEW_CHARS),
    "</persisted-output>",
  ].join("\n");
}

/** L1: past the maximum, archive everything and keep a head, a marker and a tail. */
export function snip(messages: MessageParam[], context: LayerContext): MessageParam[] {
  const { snipMaxMessages, snipTargetMessages, snipKeepHead } = context.limits;
  if (messages.length <= snipMaxMessages) return messages;
  let headEnd = snipKeepHead;
  let tailStart = messages.length - (snipTargetMessages - snipKeepHead - 1);
  // Never cut between a tool_use and its tool_result.
  while (
    headEnd < tailStart &&
    hasToolUse(messages[headEnd - 1]) &&
    hasToolResult(messages[headEnd])
  )
    headEnd++;
  if (tailStart > 0 && hasToolResult(messages[tailStart]) && hasToolUse(messages[tailStart - 1]))
    tailStart--;
  // The last reply and what follows it (the newest batch, unseen by the model) always stay.
  const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
  if (lastAssistant !== -1) tailStart = Math.min(tailStart, lastAssistant);
  if (headEnd >= tailStart) return messages;
  const archive = context.archive(messages);
  const removed = tailStart - headEnd;
  context.say(`[compact L1] ${removed} messages archived (${archive})`);
  const marker = tagOrigin(
    { role: "user", content: `[${removed} messages archived at ${archive}]` },
    "compaction",
  );
  return [...messages.slice(0, headEnd), marker, ...messages.slice(tailStart)];
}

/** L2: results the model has seen (before the last assistant message), but the latest few. */
export function micro(messages: MessageParam[], context: LayerContext): MessageParam[] {
  const { keepRecent, microMinLength } = context.limits;
  const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
  const seen: Array<{ message: number; block: number }> = [];
  messages.forEach((message, m) => {
    if (m >= lastAssistant || message.role !== "user" || typeof message.content === "string")
      return;
    message.content.forEach((block, b) => {
      if (block.type === "tool_result") seen.push({ message: m, block: b });
    });
  });
  const old = seen.slice(0, Math.max(0, seen.length - keepRecent));
  const copy = [...messages];
  let compacted = 0;
  let before = 0;
  let after = 0;
  for (const { message, block } of old) {
    const content = [...(copy[message]!.content as Block[])];
    const result = content[block] as ToolResult;
    const text = resultText(result);
    if (text.length <= microMinLength || isPlaceholder(text)) continue;
    const saved = trustedStubPath(context.workdir, text);
    const placeholder = saved ? `[Earlier tool result saved at ${saved}]` : MICRO_PLACEHOLDER;
    content[block] = { ...result, content: placeholder };
    copy[message] = { role: "user", content };
    compacted++;
    before += text.length;
    after += placeholder.length;
  }
  if (compacted === 0) return messages;
  context.say(`[compact L2] ${compacted} result(s) compacted (${before} → ${after} chars)`);
  return copy;
}

/**
 * The path of a stub this harness wrote: the text starts with `<persisted-output>` and
 * names an existing file under .harness/tool-results/. A `Full output:` line anywhere
 * else (a file or a command's output can say anything) is never trusted.
 */
export function trustedStubPath(workdir: string, text: string): string | null {
  if (!isStub(text)) return null;
  const line = text.split("\n")[1] ?? "";
  if (!line.startsWith("Full output: ")) return null;
  const file = line.slice("Full output: ".length);
  const folder = path.join(workdir, ".harness", "tool-results");
  try {
    const real = realpathSync(file);
    const inside = real.startsWith(`${realpathSync(folder)}${path.sep}`);
    return inside && existsSync(real) ? file : null;
  } catch {
    return null;
  }
}

/** A tool_use id as a file name: `[A-Za-z0-9._-]` only, at most 120 characters. */
export function safeId(id: string): string {
  const safe = id.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120);
  return safe || "unknown";
}

export function hasToolUse(message: MessageParam | undefined): boolean {
  return (
    message?.role === "assistant" &&
    Array.isArray(message.content) &&
    message.content.some((block) => block.type === "tool_use")
  );
}

export function hasToolResult(message: MessageParam | undefined): boolean {
  return (
    message?.role === "user" &&
    Array.isArray(message.content) &&
    message.content.some((block) => block.type === "tool_result")
  );
}

export function resultText(block: ToolResult): string {
  if (typeof block.content === "string") return block.content;
  return (block.content ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}

export function resultLength(block: Block): number {
  return block.type === "tool_result" ? resultText(block).length : 0;
}

/** One of L2's own one-line placeholders (already compacted). */
function isPlaceholder(text: string): boolean {
  return text === MICRO_PLACEHOLDER || /^\[Earlier tool result saved at [^\n]*\]$/.test(text);
}

function isStub(text: string): boolean {
  return text.startsWith("<persisted-output>");
}
