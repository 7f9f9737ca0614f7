/**
 * Recovery: every model call of the session (the main agent, subagents, teammates,
 * compaction summaries, memory calls) goes through one retry layer, wrapped around the
 * model client (`extendClient`), so the SDK's own retries are off on those calls and there
 * is exactly one layer.
 *
 *   call ──> answer                                        done
 *        ──> 429 / 529 / 500 / 502 / 503 / 504,
 *            no connection, a stream cut off     ──> wait, call again (at most 3 times)
 *        ──> any other 4xx, the user's Ctrl-C    ──> the error goes to the caller
 *
 * The wait is min(500 · 2^k, 32 000) ms plus up to 25 % jitter, or what `retry-after`
 * asks for (at most 60 s). With FALLBACK_MODEL_ID set, two 529s in a row switch the rest of
 * the turn to that model; the next turn starts on MODEL_ID again. Each step is one dim line.
 *
 * A reply cut off at max_tokens (the loop's seams, per run of the loop):
 *
 *   first of the run   ──> discarded, asked again with 16 000 instead of 8 000
 *   later ones         ──> kept; their tool calls are refused with a request to resend
 *                          them in smaller pieces, or, without calls, the model is asked
 *                          to continue where it stopped (at most twice a run)
 *   a reply not cut off ──> the next call is back at 8 000
 */
import { type CallFailure, callFailure, type ModelClient, type Printer } from "shared";
import type { LoopSeams, Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { MAX_TOKENS } from "./loop.ts";

/** Retries after the first attempt: 4 attempts, so three 529s with a fallback still succeed. */
export const MAX_RETRIES = 3;
export const BASE_DELAY_MS = 500;
export const MAX_DELAY_MS = 32_000;
export const MAX_RETRY_AFTER_MS = 60_000;
export const JITTER = 0.25;
const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504, 529]);
/** Consecutive 529s that switch the rest of the turn to the fallback model. */
export const OVERLOADS_BEFORE_FALLBACK = 2;

/** Why a failure is retried (its dim line says so), or null when it goes to the caller. */
export function retryReason(failure: CallFailure): string | null {
  switch (failure.kind) {
    case "status":
      if (!RETRIED_STATUSES.has(failure.status)) return null;
      return failure.status === 529
        ? "overloaded (529)"
        : failure.status === 429
          ? "rate limited (429)"
          : `server error (${failure.status})`;
    case "connection":
      return "connection lost";
    case "cut":
      return "the stream ended before the answer did";
    default:
      return null;
  }
}

/** How long to wait before retry `k` (0 for the first): `retry-after` if sent, else backoff. */
export function retryDelayMs(
  k: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== null) return Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  const backoff = Math.min(BASE_DELAY_MS * 2 ** k, MAX_DELAY_MS);
  return Math.round(backoff * (1 + JITTER * random()));
}

export interface RecoveryOptions {
  /** FALLBACK_MODEL_ID, or null. */
  fallbackModel: string | null;
  /** Where the dim lines go. */
  printer: Pick<Printer, "line">;
  /** Waits `ms`, or rejects when `signal` aborts (tests pass a clock of their own). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

/** The retry layer's state: the consecutive 529s and the fallback, per scope, for one turn. */
export class Recovery {
  private readonly turn = new Map<string, { overloads: number; fallback: boolean }>();
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;

  private readonly options: RecoveryOptions;

  constructor(options: RecoveryOptions) {
    this.options = options;
    this.sleep = options.sleep ?? abortableSleep;
    this.random = options.random ?? Math.random;
  }

  /** A new main turn: every scope starts on MODEL_ID again. */
  newTurn(): void {
    this.turn.clear();
  }

  /** `client` with this layer around both of its calls. */
  wrap(client: ModelClient): ModelClient {
    const stream = client.stream?.bind(client);
    return {
      create: (params, options = {}) =>
        this.attempts(params, options, (p) => client.create(p, { ...options, maxRetries: 0 })),
      ...(stream
        ? {
            stream: (params, options = {}) =>
              this.attempts(params, options, (p) => stream(p, { ...options, maxRetries: 0 })),
          }
        : {}),
    };
  }

  private async attempts<P extends { model: string }, R>(
    params: P,
    options: { scope?: string; signal?: AbortSignal },
    call: (params: P) => Promise<R>,
  ): Promise<R> {
    const scope = options.scope ?? "main";
    const state = this.turn.get(scope) ?? { overloads: 0, fallback: false };
    this.turn.set(scope, state);
    const fallback = this.options.fallbackModel;
    for (let k = 0; ; k++) {
      const model = state.fallback && fallback ? fallback : params.model;
      try {
        const answer = await call({ ...params, model });
        state.overloads = 0;
        return answer;
      } catch (error) {
        const failure = callFailure(error);
        const reason = retryReason(failure);
        if (reason === null || k >= MAX_RETRIES) throw error;
        const overloaded = failure.kind === "status" && failure.status === 529;
        state.overloads = overloaded ? state.overloads + 1 : 0;
        const who = scope === "main" ? "" : `${scope}: `;
        if (fallback && !state.fallback && state.overloads >= OVERLOADS_BEFORE_FALLBACK) {
          state.fallback = true;
          this.options.printer.line(
            `[fallback] ${who}${state.overloads} overloaded answers in a row: the rest of this turn uses ${fallback}`,
            "dim",
          );
        }
        const wait = retryDelayMs(
          k,
          failure.kind === "status" ? failure.retryAfterMs : null,
          this.random,
        );
        this.options.printer.line(
          `[retry] ${who}${reason}; attempt ${k + 2} of ${MAX_RETRIES + 1} in ${(wait / 1000).toFixed(1)} s`,
          "dim",
        );
        await this.sleep(wait, options.signal);
      }
    }
  }
}

/** max_tokens for the redone call after a first truncation. */
export const ESCALATED_MAX_TOKENS = 16_000;
/** Continuations asked for in one run of the loop, at most. */
export const MAX_CONTINUATIONS = 2;
export const RESEND_SMALLER =
  "Error: your reply hit max_tokens before this call was complete, so it was not run. Send it again in smaller pieces (a shorter file, several edits).";
export const CONTINUE_TEXT =
  "Your reply was cut off at max_tokens. Continue exactly where you stopped, without repeating anything.";

/** The max_tokens policy for one run of the loop (a fresh state per run). */
export function maxTokensSeams(printer: Pick<Printer, "line">): LoopSeams {
  let escalated = false;
  let truncated = false;
  let continuations = 0;
  /** The raised limit while replies keep hitting it; undefined: the loop's default. */
  let limit: number | undefined;
  return {
    async aroundModelCall(next) {
      let response = await next(limit === undefined ? {} : { maxTokens: limit });
      if (response.stop_reason === "max_tokens" && !escalated) {
        escalated = true;
        printer.line(
          `[max_tokens] the reply hit ${limit ?? MAX_TOKENS} tokens: asking again with ${ESCALATED_MAX_TOKENS}`,
          "dim",
        );
        limit = ESCALATED_MAX_TOKENS;
        response = await next({ maxTokens: limit });
      }
      truncated = response.stop_reason === "max_tokens";
      // A reply that fits puts the next call back on the default.
      if (!truncated) limit = undefined;
      return response;
    },
    // Before the gates: a call cut off mid-input must not ask the user or run a hook.
    async beforeCalls() {
      return truncated ? { content: RESEND_SMALLER, isError: true } : null;
    },
    async onStop(_messages, response) {
      if (response.stop_reason !== "max_tokens" || continuations >= MAX_CONTINUATIONS) return null;
      continuations++;
      printer.line(
        `[max_tokens] still cut off: asking the model to continue (${continuations} of ${MAX_CONTINUATIONS})`,
        "dim",
      );
      return CONTINUE_TEXT;
    },
  };
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () => {
      clearTimeout(timer);
      const abort = new Error("The turn was interrupted.");
      abort.name = "AbortError";
      reject(abort);
    };
    if (signal?.aborted) return aborted();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

export function recoveryMechanism(harness: Harness): Mechanism {
  const fallbackModel = harness.env.FALLBACK_MODEL_ID?.trim() || null;
  const recovery = new Recovery({ fallbackModel, printer: harness.printer });
  return {
    name: "recovery",
    extendClient: (client) => recovery.wrap(client),
    loop: () => maxTokensSeams(harness.printer),
    // Reset when a turn ends too, so the next turn's own side calls (memory recall, in an
    // earlier mechanism's beforeTurn) start on MODEL_ID.
    turn: {
      beforeTurn: async () => recovery.newTurn(),
      afterTurn: async () => recovery.newTurn(),
    },
    start: () =>
      fallbackModel
        ? [{ text: `Fallback model after two overloaded answers: ${fallbackModel}`, tone: "dim" }]
        : [],
  };
}
