/**
 * The model client.
 *
 * `createAnthropic` builds the SDK client with every credential passed explicitly, so the
 * SDK never reads a second one from the environment: one auth header, always.
 * `createModelClient` wraps it with the narrow interface the loop uses: each call is
 * logged under its scope and counted by the usage meter. Tests and the demo point the
 * same code at the fake server.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Config } from "./config.ts";
import type { Observer } from "./events.ts";
import type { SessionLog } from "./log.ts";
import { onFirstUse } from "./modules.ts";
import type { UsageMeter } from "./usage.ts";

type Sdk = typeof import("@anthropic-ai/sdk");

/**
 * The SDK, loaded when the first client is made. Its ESM entry is about 1 500 modules, and
 * under the TypeScript loader (tsx) every one of them goes through the loader's hooks: that
 * alone cost 0.5 s of each start (modules.ts).
 */
const requireSdk = onFirstUse<Sdk>(import.meta.url, "@anthropic-ai/sdk");
/** Set once the SDK is loaded: before that, no error can be one of its classes. */
let sdk: Sdk | null = null;

function loadSdk(): Sdk {
  sdk ??= requireSdk();
  return sdk;
}

export type MessageParams = Anthropic.MessageCreateParamsNonStreaming;

export interface CallOptions {
  /** Who is calling: "main", "sub", "compact", a teammate's name … (log and usage). */
  scope?: string;
  signal?: AbortSignal;
  /** Overrides the SDK's retries for this call (s15 does its own). */
  maxRetries?: number;
}

type RequestOptions = { signal?: AbortSignal; maxRetries?: number };

export interface StreamOptions extends CallOptions {
  /** Each piece of answer text as it arrives. */
  onText?: (text: string) => void;
}

/** The only thing the loop knows about the model. */
export interface ModelClient {
  create(params: MessageParams, options?: CallOptions): Promise<Anthropic.Message>;
  /**
   * The same call streamed (s15): `onText` sees the answer as it arrives, and the promise
   * resolves to the whole message, exactly as `create` would return it.
   */
  stream?(params: MessageParams, options?: StreamOptions): Promise<Anthropic.Message>;
}

export function createAnthropic(
  config: Pick<Config, "apiKey" | "authToken" | "baseURL">,
  options: { maxRetries?: number; timeoutMs?: number } = {},
): Anthropic {
  const { Anthropic: Client } = loadSdk();
  return new Client({
    // Exactly one credential; `null` keeps the SDK from reading the other from the env.
    ...(config.apiKey ? { apiKey: config.apiKey, authToken: null } : { apiKey: null }),
    ...(config.apiKey ? {} : { authToken: config.authToken }),
    baseURL: config.baseURL,
    maxRetries: options.maxRetries ?? 2,
    timeout: options.timeoutMs ?? 10 * 60 * 1000,
  });
}

export interface ModelClientOptions {
  /** The SDK client, or a function that makes it on the first call (start-up stays light). */
  anthropic: Anthropic | (() => Anthropic);
  log: SessionLog;
  usage: UsageMeter;
  /** Sees each call's wall time at the client (the benchmark). */
  observer?: Observer;
}

export function createModelClient(options: ModelClientOptions): ModelClient {
  let anthropic = typeof options.anthropic === "function" ? null : options.anthropic;
  const make = options.anthropic;
  /** One call, logged under its scope and counted, whether it is plain or streamed. */
  async function call(
    params: MessageParams,
    callOptions: CallOptions,
    send: (client: Anthropic, request: RequestOptions) => Promise<Anthropic.Message>,
    streamed = false,
  ): Promise<Anthropic.Message> {
    const scope = callOptions.scope ?? "main";
    anthropic ??= (make as () => Anthropic)();
    // Logged as the API receives it: the SDK adds `stream: true` to a streamed call's body.
    options.log.request(streamed ? { ...params, stream: true } : params, scope);
    const started = performance.now();
    try {
      const message = await send(anthropic, {
        signal: callOptions.signal,
        ...(callOptions.maxRetries === undefined ? {} : { maxRetries: callOptions.maxRetries }),
      });
      options.log.record("response", message, scope);
      options.usage.add(scope, message.usage, message.model);
      return message;
    } catch (error) {
      options.log.record("api_error", describeApiError(error, params.model), scope);
      throw error;
    } finally {
      options.observer?.modelCall?.({ scope, startedMs: started, endedMs: performance.now() });
    }
  }
  return {
    create: (params, callOptions = {}) =>
      call(params, callOptions, (client, request) => client.messages.create(params, request)),
    stream: (params, callOptions = {}) =>
      call(
        params,
        callOptions,
        (client, request) => {
          const stream = client.messages.stream(params, request);
          if (callOptions.onText) stream.on("text", callOptions.onText);
          // Rejects when the stream ends before message_stop: a cut-off answer is no answer.
          return stream.finalMessage();
        },
        true,
      ),
  };
}

/** One line for the user: status and the API's own message; a rejected model names MODEL_ID. */
export function describeApiError(error: unknown, model?: string): string {
  // The SDK's error classes exist only once the SDK is loaded; before that nothing can be one.
  const classes = sdk;
  if (classes && error instanceof classes.APIConnectionError) {
    return `connection error: ${error.cause instanceof Error ? error.cause.message : error.message}`;
  }
  if (classes && error instanceof classes.APIError) {
    const body = error.error as { error?: { type?: string; message?: string } } | undefined;
    const message = body?.error?.message ?? error.message;
    const type = body?.error?.type ? ` ${body.error.type}` : "";
    let line = `API error ${error.status ?? "?"}${type}: ${message}`;
    const modelRejected =
      error.status === 404 || /\bmodel\b/i.test(message) || body?.error?.type === "not_found_error";
    if (modelRejected && model && (error.status === 404 || error.status === 400)) {
      line += ` (the endpoint rejected the model '${model}'; set MODEL_ID to a model it serves)`;
    }
    return line;
  }
  if (classes && error instanceof classes.AnthropicError) {
    // The SDK's base class alone: the stream broke off (callFailure's "cut").
    const cause = error.cause instanceof Error ? error.cause.message : error.message;
    return `connection error: the stream ended before the answer did (${cause})`;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * How a model call failed, by the SDK's error classes and the HTTP status (s15's recovery
 * decides what to retry by it): the user's abort, an HTTP error with its status and any
 * `retry-after`, no answer at all (refused, reset, timed out), a stream that ended before
 * `message_stop`, or anything else.
 */
export type CallFailure =
  | { kind: "aborted" }
  | { kind: "status"; status: number; retryAfterMs: number | null }
  | { kind: "connection" }
  | { kind: "cut" }
  | { kind: "other" };

export function callFailure(error: unknown, now = Date.now()): CallFailure {
  if (isAbortError(error)) return { kind: "aborted" };
  const classes = sdk;
  if (!classes) return { kind: "other" };
  if (error instanceof classes.APIConnectionError) return { kind: "connection" };
  if (error instanceof classes.APIError && typeof error.status === "number") {
    return { kind: "status", status: error.status, retryAfterMs: retryAfterMs(error.headers, now) };
  }
  // The SDK's base class alone: the stream broke off, or ended without a whole message.
  if (error instanceof classes.AnthropicError) return { kind: "cut" };
  return { kind: "other" };
}

/** `retry-after-ms`, else `retry-after` in seconds or as an HTTP date; null when absent. */
function retryAfterMs(headers: Headers | undefined, now: number): number | null {
  const ms = Number(headers?.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get("retry-after");
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

export function isAbortError(error: unknown): boolean {
  return (
    (sdk !== null && error instanceof sdk.APIUserAbortError) ||
    (error instanceof Error && error.name === "AbortError")
  );
}
