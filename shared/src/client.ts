/**
 * The model client (DESIGN §3, §7.7).
 *
 * `createAnthropic` builds the SDK client with every credential passed explicitly, so the
 * SDK never reads a second one from the environment: one auth header, always.
 * `createModelClient` wraps it with the narrow interface the loop uses: each call is
 * logged under its scope and counted by the usage meter. Tests and the demo point the
 * same code at the fake server.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { Config } from "./config.ts";
import type { Observer } from "./events.ts";
import type { SessionLog } from "./log.ts";
import type { UsageMeter } from "./usage.ts";

export type MessageParams = Anthropic.MessageCreateParamsNonStreaming;

export interface CallOptions {
  /** Who is calling: "main", "sub", "compact", a teammate's name … (log and usage). */
  scope?: string;
  signal?: AbortSignal;
  /** Overrides the SDK's retries for this call (s15 does its own). */
  maxRetries?: number;
}

/** The only thing the loop knows about the model. */
export interface ModelClient {
  create(params: MessageParams, options?: CallOptions): Promise<Anthropic.Message>;
}

export function createAnthropic(
  config: Pick<Config, "apiKey" | "authToken" | "baseURL">,
  options: { maxRetries?: number; timeoutMs?: number } = {},
): Anthropic {
  return new Anthropic({
    // Exactly one credential; `null` keeps the SDK from reading the other from the env.
    ...(config.apiKey ? { apiKey: config.apiKey, authToken: null } : { apiKey: null }),
    ...(config.apiKey ? {} : { authToken: config.authToken }),
    baseURL: config.baseURL,
    maxRetries: options.maxRetries ?? 2,
    timeout: options.timeoutMs ?? 10 * 60 * 1000,
  });
}

export interface ModelClientOptions {
  anthropic: Anthropic;
  log: SessionLog;
  usage: UsageMeter;
  /** Sees each call's wall time at the client (the benchmark). */
  observer?: Observer;
}

export function createModelClient(options: ModelClientOptions): ModelClient {
  return {
    async create(params, callOptions = {}) {
      const scope = callOptions.scope ?? "main";
      options.log.record("request", params, scope);
      const started = performance.now();
      try {
        const message = await options.anthropic.messages.create(params, {
          signal: callOptions.signal,
          ...(callOptions.maxRetries === undefined ? {} : { maxRetries: callOptions.maxRetries }),
        });
        options.log.record("response", message, scope);
        options.usage.add(scope, message.usage);
        return message;
      } catch (error) {
        options.log.record("api_error", describeApiError(error, params.model), scope);
        throw error;
      } finally {
        options.observer?.modelCall?.({ scope, startedMs: started, endedMs: performance.now() });
      }
    },
  };
}

/** One line for the user: status and the API's own message; a rejected model names MODEL_ID. */
export function describeApiError(error: unknown, model?: string): string {
  if (error instanceof Anthropic.APIConnectionError) {
    return `connection error: ${error.cause instanceof Error ? error.cause.message : error.message}`;
  }
  if (error instanceof Anthropic.APIError) {
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
  if (error instanceof Error) return error.message;
  return String(error);
}

export function isAbortError(error: unknown): boolean {
  return (
    error instanceof Anthropic.APIUserAbortError ||
    (error instanceof Error && error.name === "AbortError")
  );
}
