/**
 * A local stand-in for the Anthropic Messages API. It listens on 127.0.0.1, checks each request
 * the way the real API does (auth, JSON, the shape of `system`, `messages` and `tools`,
 * tool_use/tool_result pairing, the cache_control budget) and answers valid ones from a scripted
 * model, as a complete Message or as the real server-sent event sequence. Faults (HTTP errors,
 * dropped connections) can be scripted or injected with `failNext`.
 *
 * Point the real SDK at it with `baseURL: server.url` (or ANTHROPIC_BASE_URL).
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type Anthropic from "@anthropic-ai/sdk";
import {
  isScriptedDrop,
  isScriptedError,
  type MessageRequest,
  type ScriptedAnswer,
  type ScriptedBlock,
  type ScriptedDrop,
  type ScriptedError,
  ScriptedModel,
  type ScriptedReply,
  stopReasonOf,
  toolUseIdGenerator,
  withToolUseIds,
} from "./scripted.ts";

export interface ReceivedRequest {
  method: string;
  /** The path without its query string, e.g. "/v1/messages". */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body exactly as sent. */
  rawBody: string;
  /**
   * The parsed JSON body, or undefined when the body is not JSON. For a request the server
   * accepted, prompt-cache markers are taken out (`withoutCacheMarks`): the request as the
   * harness's mechanisms wrote it, before s15 marked it for caching. The scripted model sees
   * the same; `rawBody` keeps the markers.
   */
  body: unknown;
  /**
   * Why the server refused the request before consulting the script (the error message of a
   * 400, 401 or 404 it produced itself), or null. A refused request never consumes a step.
   */
  rejected: string | null;
  /**
   * When the request arrived (its headers) and when its answer was fully written, in
   * `performance.now()` ms of the server's process; `answeredMs` is null until then.
   * The time between one answer and the next request is the client's own (the benchmark).
   */
  timing: { receivedMs: number; answeredMs: number | null };
}

export interface FakeServerOptions {
  model: ScriptedModel | ((req: MessageRequest) => ScriptedAnswer);
  /** When given, a request for any other model gets 404 not_found_error "model: <id>". */
  knownModels?: string[];
  /** Delay before answering each request. */
  latencyMs?: number;
  /** The prompt cache's clock in ms (default Date.now): an entry lives five minutes from its last use. */
  now?: () => number;
}

export interface FakeServer {
  /** "http://127.0.0.1:<port>": pass as baseURL / ANTHROPIC_BASE_URL. */
  url: string;
  /** Every request, in arrival order, including refused ones. */
  requests: ReceivedRequest[];
  /** Queue a one-shot fault for the next valid request (FIFO); it takes precedence over the model. */
  failNext(answer: ScriptedError | ScriptedDrop): void;
  /** Closes the server and every open socket. */
  close(): Promise<void>;
}

const MESSAGES_PATH = "/v1/messages";
const DEFAULT_DROP_AFTER_EVENTS = 2;
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,128}$/;
const TOOL_USE_ID_PATTERN = /^[a-zA-Z0-9_-]+$/;
/** Prompt-cache breakpoints one request may carry, across system, tools and messages. */
const MAX_CACHE_CONTROL_BLOCKS = 4;
const STREAM_TEXT_CHUNK = 12;
const STREAM_JSON_CHUNK = 24;
const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// ---------------------------------------------------------------------------------------------
// Validation: the checks the real API makes before generating, with its wording.

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const EMPTY_TEXT = "text content blocks must be non-empty";
const WHITESPACE_TEXT = "text content blocks must contain non-whitespace text";

/**
 * The block types a message may hold: the SDK's ContentBlockParam union. The API names them all
 * when it refuses another tag; the order and the list here are the SDK's, not copied from an
 * error, so the tail of that message is modelled.
 */
const MESSAGE_BLOCK_TYPES: readonly string[] = [
  "text",
  "image",
  "document",
  "search_result",
  "thinking",
  "redacted_thinking",
  "tool_use",
  "tool_result",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "container_upload",
];
/** The block types a tool_result's content may hold (the SDK's ToolResultBlockParam.content). */
const TOOL_RESULT_BLOCK_TYPES: readonly string[] = [
  "text",
  "image",
  "search_result",
  "document",
  "tool_reference",
  "browser_state",
];

/**
 * The error for a text value that is empty or whitespace only, else null. `field` is the
 * top-level field the API names: "messages" for message text, "system" for the system prompt.
 */
function textProblem(text: string, field: "messages" | "system" = "messages"): string | null {
  if (text === "") return `${field}: ${EMPTY_TEXT}`;
  if (text.trim() === "") return `${field}: ${WHITESPACE_TEXT}`;
  return null;
}

/**
 * `system` is a string or a list of text blocks, and its text must not be empty or blank. The
 * real API refuses `system: ""` too ("system: text content blocks must be non-empty"): an empty
 * prompt has to be left out, not sent. So is `null` ("system: Input should be a valid list").
 * Those texts, the whitespace one and "system.N.type: Input should be 'text'" are the real API's;
 * the other per-block messages (not a dictionary, missing or non-string text) are modelled on its
 * validator. An empty list is let through: no report shows the API refusing one.
 */
function validateSystem(system: unknown): string | null {
  if (system === undefined) return null;
  if (typeof system === "string") return textProblem(system, "system");
  if (!Array.isArray(system)) return "system: Input should be a valid list";
  for (const [i, block] of system.entries()) {
    const path = `system.${i}`;
    if (!isObject(block)) return `${path}: Input should be a valid dictionary`;
    if (block.type === undefined) return `${path}.type: Field required`;
    if (block.type !== "text") return `${path}.type: Input should be 'text'`;
    if (block.text === undefined) return `${path}.text: Field required`;
    if (typeof block.text !== "string") return `${path}.text: Input should be a valid string`;
    const problem = textProblem(block.text, "system");
    if (problem) return problem;
  }
  return null;
}

function validateTools(tools: unknown): string | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) return "tools: Input should be a valid list";
  const names = new Set<string>();
  let duplicate = false;
  for (const [i, tool] of tools.entries()) {
    if (!isObject(tool)) return `tools.${i}: Input should be a valid dictionary`;
    const kind = typeof tool.type === "string" && tool.type !== "custom" ? tool.type : "custom";
    const name = tool.name;
    if (name === undefined) return `tools.${i}.${kind}.name: Field required`;
    if (typeof name !== "string") return `tools.${i}.${kind}.name: Input should be a valid string`;
    if (!TOOL_NAME_PATTERN.test(name)) {
      return `tools.${i}.${kind}.name: String should match pattern '${TOOL_NAME_PATTERN.source}'`;
    }
    // A custom tool is only its schema to the model; server tools (bash_20250124 and the like)
    // bring their own and take none. Wording is the real API's, except "Input should be a valid
    // dictionary", which is modelled on its validator.
    if (kind === "custom") {
      const schema = tool.input_schema;
      if (schema === undefined) return `tools.${i}.custom.input_schema: Field required`;
      if (!isObject(schema)) {
        return `tools.${i}.custom.input_schema: Input should be a valid dictionary`;
      }
      if (schema.type === undefined) return `tools.${i}.custom.input_schema.type: Field required`;
      if (schema.type !== "object") {
        return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
      }
    }
    if (names.has(name)) duplicate = true;
    names.add(name);
  }
  return duplicate ? "tools: Tool names must be unique." : null;
}

/** The real API's refusal of a block type outside `allowed` (the list itself is modelled). */
function unknownTagProblem(path: string, tag: string, allowed: readonly string[]): string {
  const expected = allowed.map((t) => `'${t}'`).join(", ");
  return `${path}: Input tag '${tag}' found using 'type' does not match any of the expected tags: ${expected}`;
}

/**
 * Checks one content block; `path` is e.g. "messages.2.content.0" and `allowed` the block types
 * that may stand there.
 */
function validateBlock(
  block: unknown,
  path: string,
  allowed: readonly string[] = MESSAGE_BLOCK_TYPES,
): string | null {
  if (!isObject(block)) return `${path}: Input should be a valid dictionary`;
  if (block.type === undefined) return `${path}.type: Field required`;
  if (typeof block.type !== "string") return `${path}.type: Input should be a valid string`;
  if (!allowed.includes(block.type)) return unknownTagProblem(path, block.type, allowed);
  switch (block.type) {
    case "text": {
      if (block.text === undefined) return `${path}.text.text: Field required`;
      if (typeof block.text !== "string")
        return `${path}.text.text: Input should be a valid string`;
      return textProblem(block.text);
    }
    case "tool_use": {
      if (typeof block.id !== "string") return `${path}.tool_use.id: Field required`;
      if (!TOOL_USE_ID_PATTERN.test(block.id)) {
        return `${path}.tool_use.id: String should match pattern '${TOOL_USE_ID_PATTERN.source}'`;
      }
      if (typeof block.name !== "string") return `${path}.tool_use.name: Field required`;
      if (block.input === undefined) return `${path}.tool_use.input: Field required`;
      // The input is the tool's arguments object; an array, string, number or null is refused.
      if (!isObject(block.input)) {
        return `${path}.tool_use.input: Input should be a valid dictionary`;
      }
      return null;
    }
    case "tool_result": {
      if (typeof block.tool_use_id !== "string") {
        return `${path}.tool_result.tool_use_id: Field required`;
      }
      if (!TOOL_USE_ID_PATTERN.test(block.tool_use_id)) {
        return `${path}.tool_result.tool_use_id: String should match pattern '${TOOL_USE_ID_PATTERN.source}'`;
      }
      if (Array.isArray(block.content)) {
        for (const [k, inner] of block.content.entries()) {
          const problem = validateBlock(
            inner,
            `${path}.tool_result.content.${k}`,
            TOOL_RESULT_BLOCK_TYPES,
          );
          if (problem) return problem;
        }
      }
      return null;
    }
    default:
      return null;
  }
}

function blocksOf(message: JsonObject): JsonObject[] {
  return Array.isArray(message.content) ? message.content.filter(isObject) : [];
}

function toolUseIds(message: JsonObject): string[] {
  if (message.role !== "assistant") return [];
  return blocksOf(message)
    .filter((b) => b.type === "tool_use" && typeof b.id === "string")
    .map((b) => b.id as string);
}

/** The tool_use_ids of the tool_result blocks that open a user message, before any other block. */
function leadingToolResultIds(message: JsonObject | undefined): Set<string> {
  const ids = new Set<string>();
  if (message?.role !== "user") return ids;
  for (const block of blocksOf(message)) {
    if (block.type !== "tool_result") break;
    if (typeof block.tool_use_id === "string") ids.add(block.tool_use_id);
  }
  return ids;
}

/**
 * tool_use blocks are the assistant's and tool_result blocks the user's. Checked over the whole
 * conversation before the pairing, so a block in the wrong turn is named as that rather than as
 * an unanswered tool_use.
 */
function validateBlockRoles(messages: JsonObject[]): string | null {
  for (const [i, message] of messages.entries()) {
    for (const block of blocksOf(message)) {
      if (block.type === "tool_use" && message.role !== "assistant") {
        return `messages.${i}: \`tool_use\` blocks can only be in \`assistant\` messages`;
      }
      if (block.type === "tool_result" && message.role !== "user") {
        return `messages.${i}: \`tool_result\` blocks can only be in \`user\` messages`;
      }
    }
  }
  return null;
}

/** tool_use ids must be unique and answered; tool_result blocks must answer the turn before. */
function validatePairing(messages: JsonObject[]): string | null {
  const seenToolUse = new Set<string>();
  for (const [i, message] of messages.entries()) {
    if (message.role === "assistant") {
      for (const [j, block] of (Array.isArray(message.content) ? message.content : []).entries()) {
        if (!isObject(block) || block.type !== "tool_use" || typeof block.id !== "string") continue;
        if (seenToolUse.has(block.id))
          return `messages.${i}.content.${j}: \`tool_use\` ids must be unique`;
        seenToolUse.add(block.id);
      }
      const ids = toolUseIds(message);
      const answered = leadingToolResultIds(messages[i + 1]);
      const missing = ids.filter((id) => !answered.has(id));
      if (missing.length > 0) {
        return (
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately ` +
          `after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding ` +
          "`tool_result` block in the next message."
        );
      }
    }
    if (message.role === "user" && Array.isArray(message.content)) {
      const previous = i > 0 ? messages[i - 1] : undefined;
      const offered = new Set(previous ? toolUseIds(previous) : []);
      const answered = new Set<string>();
      for (const [j, block] of message.content.entries()) {
        if (!isObject(block) || block.type !== "tool_result") continue;
        const id = String(block.tool_use_id);
        if (!offered.has(id)) {
          return (
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` ` +
            `blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` ` +
            "block in the previous message."
          );
        }
        if (answered.has(id)) {
          return (
            `messages.${i}.content.${j}: each \`tool_use\` must have a single result. ` +
            `Found multiple \`tool_result\` blocks with id: ${id}`
          );
        }
        answered.add(id);
      }
    }
  }
  return null;
}

function validateMessages(messages: unknown[]): string | null {
  for (const [i, message] of messages.entries()) {
    if (!isObject(message)) return `messages.${i}: Input should be a valid dictionary`;
    if (message.role === undefined) return `messages.${i}.role: Field required`;
    if (message.role !== "user" && message.role !== "assistant") {
      return `messages: Unexpected role ${JSON.stringify(message.role)}. Allowed roles are "user" or "assistant"`;
    }
  }
  const all = messages as JsonObject[];
  if (all[0]?.role !== "user") return 'messages: first message must use the "user" role';
  for (const [i, message] of all.entries()) {
    const content = message.content;
    const isFinalAssistant = i === all.length - 1 && message.role === "assistant";
    const emptyProblem = isFinalAssistant
      ? `messages.${i}: the final assistant message must have non-empty content`
      : `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    if (content === undefined) return `messages.${i}.content: Field required`;
    if (typeof content === "string") {
      if (content === "") return emptyProblem;
      const problem = textProblem(content);
      if (problem) return problem;
      continue;
    }
    if (!Array.isArray(content)) return `messages.${i}.content: Input should be a valid list`;
    if (content.length === 0) return emptyProblem;
    for (const [j, block] of content.entries()) {
      const problem = validateBlock(block, `messages.${i}.content.${j}`);
      if (problem) return problem;
    }
  }
  return validateBlockRoles(all) ?? validatePairing(all);
}

/** 1 when `value` is an object carrying a cache_control marker (null means none), else 0. */
function cacheMarks(value: unknown): number {
  return isObject(value) && value.cache_control !== undefined && value.cache_control !== null
    ? 1
    : 0;
}

/**
 * At most four cache breakpoints per request, counted over system blocks, tool definitions and
 * message blocks, including the blocks inside a tool_result (each is a breakpoint of its own).
 * The top-level `cache_control` (automatic caching) is not counted: how it shares the budget is
 * not established, and refusing a request the API would serve is as wrong as the opposite.
 */
function validateCacheControl(body: JsonObject, messages: JsonObject[]): string | null {
  let found = 0;
  if (Array.isArray(body.system)) for (const block of body.system) found += cacheMarks(block);
  if (Array.isArray(body.tools)) for (const tool of body.tools) found += cacheMarks(tool);
  for (const message of messages) {
    for (const block of blocksOf(message)) {
      found += cacheMarks(block);
      if (block.type === "tool_result" && Array.isArray(block.content)) {
        for (const inner of block.content) found += cacheMarks(inner);
      }
    }
  }
  if (found <= MAX_CACHE_CONTROL_BLOCKS) return null;
  return `A maximum of ${MAX_CACHE_CONTROL_BLOCKS} blocks with cache_control may be provided. Found ${found}.`;
}

/**
 * Checks a Messages API request body as the real API would before generating. Returns the
 * invalid_request_error message for the first problem found, or null when the body is valid.
 */
export function validateMessageRequest(body: unknown): string | null {
  if (!isObject(body)) return "Input should be a valid dictionary or object to extract fields from";
  const maxTokens = body.max_tokens;
  if (maxTokens === undefined) return "max_tokens: Field required";
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens)) {
    return "max_tokens: Input should be a valid integer";
  }
  if (maxTokens < 1) return "max_tokens: Input should be greater than or equal to 1";
  const model = body.model;
  if (model === undefined) return "model: Field required";
  if (typeof model !== "string") return "model: Input should be a valid string";
  if (model.trim() === "") return "model: String should have at least 1 character";
  const messages = body.messages;
  if (messages === undefined) return "messages: Field required";
  if (!Array.isArray(messages)) return "messages: Input should be a valid list";
  if (messages.length === 0) return "messages: at least one message is required";
  return (
    validateSystem(body.system) ??
    validateTools(body.tools) ??
    validateMessages(messages) ??
    validateCacheControl(body, messages as JsonObject[])
  );
}

// ---------------------------------------------------------------------------------------------
// Building answers.

function randomId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let id = prefix;
  for (const byte of bytes) id += ID_ALPHABET[byte % ID_ALPHABET.length];
  return id;
}

function defaultSignature(thinkingText: string): string {
  return createHash("sha256").update(`fake-server thinking:${thinkingText}`).digest("base64");
}

function blockChars(block: ScriptedBlock): number {
  switch (block.type) {
    case "text":
      return block.text.length;
    case "thinking":
      return block.thinking.length;
    case "redacted_thinking":
      return block.data.length;
    case "tool_use":
      return block.name.length + JSON.stringify(block.input).length;
  }
}

function toContentBlock(block: ScriptedBlock, nextId: () => string): Anthropic.ContentBlock {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text, citations: null };
    case "thinking":
      return {
        type: "thinking",
        thinking: block.thinking,
        signature: block.signature ?? defaultSignature(block.thinking),
      };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: block.data };
    case "tool_use":
      return {
        type: "tool_use",
        id: block.id ?? nextId(),
        name: block.name,
        input: block.input,
        caller: { type: "direct" },
      };
  }
}

/** Tokens the fake API counts for `chars` characters of a request (about 4 per token). */
const tokensOf = (chars: number) => Math.ceil(chars / 4);

/**
 * `request` without its prompt-cache markers: every `cache_control` removed, and a system
 * prompt sent as text blocks joined back into one string (blank lines between, as the
 * prompt's sections are joined). For a request whose system was already a string this is
 * the request itself.
 */
export function withoutCacheMarks(request: MessageRequest): MessageRequest {
  const system = Array.isArray(request.system)
    ? request.system.map((block) => block.text).join("\n\n")
    : request.system;
  return {
    ...request,
    ...(system === undefined ? {} : { system }),
    ...(request.tools ? { tools: request.tools.map(withoutMark) } : {}),
    messages: request.messages.map((message) => ({
      ...message,
      content: Array.isArray(message.content) ? message.content.map(withoutMark) : message.content,
    })) as MessageRequest["messages"],
  };
}

/** What a request read from and wrote to the fake prompt cache, in tokens. */
interface CacheUse {
  read: number;
  write: number;
}

/** The fake prompt cache: a prefix's key → when the entry expires (ms on the server's clock). */
type PromptCache = Map<string, number>;

/** How long an entry lives after it was written or last read: the API's default five minutes. */
export const CACHE_LIFETIME_MS = 5 * 60_000;
/** How many blocks before a breakpoint a read looks back for an earlier cached prefix. */
export const CACHE_LOOKBACK_BLOCKS = 20;
/**
 * The shortest prefix the API caches, in tokens, by model id prefix (the first match wins;
 * other models 1024), as third-party copies of Anthropic's prompt-caching table give it in
 * December 2026.
 */
const MIN_CACHEABLE: Array<[prefix: string, tokens: number]> = [
  ["claude-opus-4-5", 4096],
  ["claude-opus-4-6", 4096],
  ["claude-opus-4-7", 4096],
  ["claude-haiku-4-5", 4096],
  ["claude-sonnet-4-6", 2048],
  ["claude-3-5-haiku", 2048],
  ["claude-3-haiku", 2048],
  ["claude-opus-5", 512],
];

/** The shortest prefix, in tokens, that `model`'s prompt cache keeps. */
export function minCacheableTokens(model: string): number {
  return MIN_CACHEABLE.find(([prefix]) => model.startsWith(prefix))?.[1] ?? 1024;
}

/**
 * The prompt cache as the API keeps it. A request is read in the API's order (tools, system
 * blocks, then each message's blocks), and every block ends a prefix whose key is everything
 * up to it, markers left out. A block carrying `cache_control` is a breakpoint:
 *
 * - read: at each breakpoint, and at each of the CACHE_LOOKBACK_BLOCKS blocks before it, a
 *   prefix still cached counts; the longest found is read, and its lifetime starts again;
 * - write: every breakpoint's prefix of at least the model's minimum length is cached for
 *   CACHE_LIFETIME_MS; what the longest one adds beyond the read is counted as written.
 */
function useCache(request: MessageRequest, cache: PromptCache, now: number): CacheUse {
  const ends: Array<{ key: string; tokens: number; breakpoint: boolean }> = [];
  let key = "";
  let chars = 0;
  // Sizes count the JSON around each part too (a comma, a message's role and brackets), so
  // a prefix's tokens match its share of the body: what follows the last breakpoint is input.
  const fold = (part: unknown, around = 1) => {
    const text = JSON.stringify(part);
    key = createHash("sha256").update(key).update("\n").update(text).digest("hex");
    chars += text.length + around;
  };
  const block = (part: unknown) => {
    fold(withoutMark(part));
    // A tool result's breakpoint can sit on one of its inner blocks.
    const inner = isObject(part) && Array.isArray(part.content) ? part.content : [];
    const breakpoint = cacheMarks(part) + inner.reduce((n: number, b) => n + cacheMarks(b), 0) > 0;
    ends.push({ key, tokens: tokensOf(chars), breakpoint });
  };
  for (const tool of request.tools ?? []) block(tool);
  if (Array.isArray(request.system)) for (const part of request.system) block(part);
  else if (request.system) fold(request.system);
  for (const message of request.messages) {
    fold(message.role, '{"role":,"content":[]},'.length);
    if (typeof message.content === "string") fold(message.content);
    else for (const part of message.content) block(part);
  }
  const live = (entry: { key: string }) => (cache.get(entry.key) ?? -Infinity) > now;
  let hit: (typeof ends)[number] | undefined;
  ends.forEach((end, at) => {
    if (!end.breakpoint) return;
    for (let back = at; back >= Math.max(0, at - CACHE_LOOKBACK_BLOCKS); back--) {
      const earlier = ends[back]!;
      if (live(earlier) && earlier.tokens > (hit?.tokens ?? 0)) hit = earlier;
    }
  });
  if (hit) cache.set(hit.key, now + CACHE_LIFETIME_MS);
  const read = hit?.tokens ?? 0;
  const minimum = minCacheableTokens(request.model);
  let write = 0;
  for (const end of ends) {
    if (!end.breakpoint || end.tokens < minimum) continue;
    if (!live(end)) write = Math.max(write, end.tokens - read);
    cache.set(end.key, now + CACHE_LIFETIME_MS);
  }
  return { read, write };
}

/** `part` without its `cache_control` marker, nor its inner blocks' (a tool result's). */
function withoutMark<T>(part: T): T {
  if (!isObject(part)) return part;
  const { cache_control: _, ...rest }: Record<string, unknown> = part;
  if (Array.isArray(rest.content)) rest.content = rest.content.map(withoutMark);
  return rest as T;
}

function buildUsage(reply: ScriptedReply, rawBody: string, cached?: CacheUse): Anthropic.Usage {
  const outputChars = reply.content.reduce((sum, b) => sum + blockChars(b), 0);
  const thinkingChars = reply.content.reduce(
    (sum, b) => sum + (b.type === "thinking" ? b.thinking.length : 0),
    0,
  );
  const cacheRead = reply.usage?.cache_read_input_tokens ?? cached?.read ?? 0;
  const cacheCreation = reply.usage?.cache_creation_input_tokens ?? cached?.write ?? 0;
  // As the API counts: input_tokens are the tokens after the last cache breakpoint.
  const input =
    reply.usage?.input_tokens ?? Math.max(1, tokensOf(rawBody.length) - cacheRead - cacheCreation);
  const output = reply.usage?.output_tokens ?? Math.max(1, Math.ceil(outputChars / 4));
  return {
    input_tokens: input,
    output_tokens: output,
    cache_read_input_tokens: cacheRead,
    cache_creation_input_tokens: cacheCreation,
    cache_creation: { ephemeral_5m_input_tokens: cacheCreation, ephemeral_1h_input_tokens: 0 },
    output_tokens_details:
      thinkingChars > 0
        ? { thinking_tokens: Math.min(output, Math.ceil(thinkingChars / 4)) }
        : null,
    server_tool_use: null,
    service_tier: "standard",
    inference_geo: null,
    speed: null,
  };
}

function buildMessage(
  reply: ScriptedReply,
  model: string,
  rawBody: string,
  nextId: () => string,
  cached?: CacheUse,
): Anthropic.Message {
  return {
    id: randomId("msg_"),
    type: "message",
    role: "assistant",
    model,
    content: reply.content.map((b) => toContentBlock(b, nextId)),
    stop_reason: stopReasonOf(reply),
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: buildUsage(reply, rawBody, cached),
  };
}

/** Splits `s` into pieces of at most `size` code points (never splitting a surrogate pair). */
function chunks(s: string, size: number): string[] {
  const points = Array.from(s);
  if (points.length === 0) return [""];
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
  return out;
}

/** The event sequence the real API streams for `message`. */
function streamEvents(message: Anthropic.Message): Anthropic.RawMessageStreamEvent[] {
  const events: Anthropic.RawMessageStreamEvent[] = [
    {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        usage: { ...message.usage, output_tokens: 1, output_tokens_details: null },
      },
    },
  ];
  for (const [index, block] of message.content.entries()) {
    switch (block.type) {
      case "text": {
        events.push({ type: "content_block_start", index, content_block: { ...block, text: "" } });
        for (const piece of chunks(block.text, STREAM_TEXT_CHUNK)) {
          events.push({
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: piece },
          });
        }
        break;
      }
      case "thinking": {
        events.push({
          type: "content_block_start",
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        });
        for (const piece of chunks(block.thinking, STREAM_TEXT_CHUNK)) {
          events.push({
            type: "content_block_delta",
            index,
            delta: { type: "thinking_delta", thinking: piece },
          });
        }
        events.push({
          type: "content_block_delta",
          index,
          delta: { type: "signature_delta", signature: block.signature },
        });
        break;
      }
      case "tool_use": {
        events.push({ type: "content_block_start", index, content_block: { ...block, input: {} } });
        const json = JSON.stringify(block.input);
        const size = Math.max(
          1,
          Math.min(STREAM_JSON_CHUNK, Math.ceil(Array.from(json).length / 2)),
        );
        for (const piece of chunks(json, size)) {
          events.push({
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: piece },
          });
        }
        break;
      }
      default:
        // redacted_thinking (and anything else) arrives whole in content_block_start.
        events.push({ type: "content_block_start", index, content_block: block });
        break;
    }
    events.push({ type: "content_block_stop", index });
  }
  events.push({
    type: "message_delta",
    delta: {
      stop_reason: message.stop_reason,
      stop_sequence: message.stop_sequence,
      stop_details: null,
      container: null,
    },
    usage: {
      input_tokens: message.usage.input_tokens,
      cache_creation_input_tokens: message.usage.cache_creation_input_tokens,
      cache_read_input_tokens: message.usage.cache_read_input_tokens,
      output_tokens: message.usage.output_tokens,
      output_tokens_details: message.usage.output_tokens_details,
      server_tool_use: null,
    },
  });
  events.push({ type: "message_stop" });
  return events;
}

function sseFrame(event: Anthropic.RawMessageStreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

// ---------------------------------------------------------------------------------------------
// HTTP plumbing.

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  requestId: string,
  extraHeaders: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...extraHeaders,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
    "request-id": requestId,
  });
  res.end(payload);
}

function sendError(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  opts: { retryable?: boolean; headers?: Record<string, string> } = {},
): void {
  const requestId = randomId("req_");
  const headers = { ...opts.headers, "x-should-retry": opts.retryable ? "true" : "false" };
  const body = { type: "error", error: { type, message }, request_id: requestId };
  sendJson(res, status, body, requestId, headers);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let done = false;
    req.on("data", (chunk: Buffer) => parts.push(chunk));
    req.on("end", () => {
      done = true;
      resolve(Buffer.concat(parts).toString("utf8"));
    });
    req.on("error", (err) => {
      done = true;
      reject(err);
    });
    req.on("close", () => {
      if (!done) reject(new Error("request closed before its body was complete"));
    });
  });
}

/** Writes `data` and waits until it is flushed, or until the response is gone. */
function writeAsync(res: ServerResponse, data: string): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("close", done);
      resolve();
    };
    res.once("close", done);
    res.write(data, () => done());
  });
}

/** A delay that does not by itself keep the process alive. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });
}

function hasAuth(headers: IncomingMessage["headers"]): boolean {
  const apiKey = headers["x-api-key"];
  if (typeof apiKey === "string" && apiKey.trim() !== "") return true;
  const authorization = headers.authorization;
  return typeof authorization === "string" && /^Bearer\s+\S+/i.test(authorization);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Starts a fake Messages API server on 127.0.0.1 at a random port. */
export async function startFakeServer(opts: FakeServerOptions): Promise<FakeServer> {
  const requests: ReceivedRequest[] = [];
  const faults: (ScriptedError | ScriptedDrop)[] = [];
  const sockets = new Set<Socket>();
  /** Cached prompt prefixes (useCache), each with its expiry on `now`. */
  const promptCache: PromptCache = new Map();
  const now = () => (opts.now ?? Date.now)();
  const nextToolUseId = toolUseIdGenerator("FakeServer");
  const model = opts.model;
  const answerFor =
    model instanceof ScriptedModel
      ? (req: MessageRequest) => model.answer(req)
      : (req: MessageRequest) => model(req);

  async function streamReply(res: ServerResponse, message: Anthropic.Message, dropAfter?: number) {
    const events = streamEvents(message);
    const limit = dropAfter === undefined ? events.length : Math.min(dropAfter, events.length - 1);
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "request-id": randomId("req_"),
    });
    res.flushHeaders();
    for (const event of events.slice(0, limit)) {
      if (res.destroyed) return;
      await writeAsync(res, sseFrame(event));
    }
    if (dropAfter === undefined) res.end();
    else res.socket?.destroy();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const record: ReceivedRequest = {
      method: req.method ?? "",
      path: url.pathname,
      headers: { ...req.headers },
      rawBody: "",
      body: undefined,
      rejected: null,
      timing: { receivedMs: performance.now(), answeredMs: null },
    };
    res.on("finish", () => {
      record.timing.answeredMs = performance.now();
    });
    requests.push(record);
    const rawBody = await readBody(req);
    record.rawBody = rawBody;
    let parseError: string | null = null;
    try {
      record.body = JSON.parse(rawBody) as unknown;
    } catch (err) {
      parseError = errorMessage(err);
    }
    if (opts.latencyMs !== undefined && opts.latencyMs > 0) await sleep(opts.latencyMs);

    const refuse = (status: number, type: string, message: string): void => {
      record.rejected = message;
      sendError(res, status, type, message);
    };
    if (record.method !== "POST" || record.path !== MESSAGES_PATH) {
      return refuse(404, "not_found_error", "Not Found");
    }
    if (!hasAuth(req.headers)) {
      return refuse(401, "authentication_error", "x-api-key header is required");
    }
    if (parseError !== null) {
      return refuse(
        400,
        "invalid_request_error",
        `The request body is not valid JSON: ${parseError}`,
      );
    }
    const problem = validateMessageRequest(record.body);
    if (problem !== null) return refuse(400, "invalid_request_error", problem);
    const sent = record.body as MessageRequest;
    const request = withoutCacheMarks(sent);
    record.body = request;
    if (opts.knownModels && !opts.knownModels.includes(request.model)) {
      return refuse(404, "not_found_error", `model: ${request.model}`);
    }

    let answer: ScriptedAnswer;
    const fault = faults.shift();
    if (fault) {
      answer = fault;
    } else {
      try {
        answer = answerFor(request);
      } catch (err) {
        sendError(res, 500, "api_error", `scripted model threw: ${errorMessage(err)}`);
        return;
      }
    }

    const streaming = request.stream === true;
    if (isScriptedError(answer)) {
      sendError(res, answer.status, answer.type, answer.message, {
        retryable: answer.retryable ?? false,
        headers: answer.headers ?? {},
      });
      return;
    }
    if (isScriptedDrop(answer)) {
      if (!streaming) {
        res.socket?.destroy();
        return;
      }
      // The message a drop interrupts is a plausible one: a short text reply.
      const reply: ScriptedReply = {
        content: [{ type: "text", text: "This answer is cut off mid-way." }],
      };
      const message = buildMessage(reply, request.model, rawBody, nextToolUseId);
      await streamReply(res, message, answer.afterEvents ?? DEFAULT_DROP_AFTER_EVENTS);
      return;
    }
    const reply = withToolUseIds(answer, nextToolUseId);
    const cached = useCache(sent, promptCache, now());
    const message = buildMessage(reply, request.model, rawBody, nextToolUseId, cached);
    if (streaming) await streamReply(res, message);
    else sendJson(res, 200, message, randomId("req_"));
  }

  const server = createServer((req, res) => {
    req.on("error", () => {});
    res.on("error", () => {});
    handle(req, res).catch((err: unknown) => {
      try {
        if (!res.headersSent && !res.destroyed) {
          sendError(res, 500, "api_error", `fake server error: ${errorMessage(err)}`);
        } else {
          res.destroy();
        }
      } catch {
        res.destroy();
      }
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("clientError", (_err, socket) => {
    socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", () => {});
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext(answer: ScriptedError | ScriptedDrop): void {
      faults.push(answer);
    },
    close(): Promise<void> {
      return new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        sockets.clear();
      });
    },
  };
}
