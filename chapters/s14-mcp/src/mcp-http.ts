/**
 * MCP's Streamable HTTP transport, the client's side (s14): one server at one URL.
 *
 *   a message   POST <url>   Accept: application/json, text/event-stream
 *                            Mcp-Session-Id, MCP-Protocol-Version once they are known;
 *                            Mcp-Method (and Mcp-Name: the tool) mirror the body, so a
 *                            2026-07-28 server can route without reading it
 *   its answer  202          nothing to read (a notification, a response)
 *               JSON         one message
 *               SSE          messages as events, until the request's response; a stream
 *                            that drops first is resumed: GET with Last-Event-ID, after the
 *                            `retry` the server gave
 *   the server  GET <url>    a stream of its own requests, when it offers one (405: none)
 *   the end     DELETE <url> with the session
 *
 * The connection (mcp-client.ts) keeps the requests, the era and the answers; this file
 * only moves messages and says, in words, why one could not be moved.
 */

import { bearerChallenge, MAX_AUTH_ATTEMPTS, type OAuth } from "./mcp-auth.ts";

/** What the transport tells its connection. */
export interface HttpWireOptions {
  url: string;
  /** Sent with every request (from `.mcp.json`, `${VAR}` expanded): never logged. */
  headers: Record<string, string>;
  /** Each message that arrives, in order. */
  deliver(message: unknown): void;
  /** A request (its id) that cannot be answered, and why. */
  fail(id: number, reason: string): void;
  /** The server forgot the session (404): the connection starts a new one, once. */
  sessionLost(): Promise<boolean>;
  /** Junk and stray events, for the server's log. */
  log(text: string): void;
  /** The server's authorization (mcp-auth.ts), for a server that answers 401. */
  auth?: OAuth;
}

/** Attempts to resume one dropped stream, and the wait when the server names none. */
export const RESUME_ATTEMPTS = 3;
export const DEFAULT_RETRY_MS = 1_000;
/** The most of an error body a message quotes. */
const BODY_QUOTE = 200;

interface SseEvent {
  id?: string;
  data: string;
  retry?: number;
}

export class HttpWire {
  /** Given by the server on initialize; sent back on every request. */
  session: string | null = null;
  /** The revision the connection speaks, once it knows it. */
  protocol: string | null = null;
  private readonly options: HttpWireOptions;
  private readonly stop = new AbortController();
  private listening = false;
  /** One authorization at a time: requests refused together wait for the same one. */
  private authorizing: Promise<void> | null = null;

  constructor(options: HttpWireOptions) {
    this.options = options;
  }

  /** Posts one message; what comes back is delivered, a failure reported for its id. */
  async send(
    message: { id?: unknown; method?: unknown; params?: unknown },
    retried = false,
    attempts = 0,
  ): Promise<void> {
    const id = typeof message.id === "number" && message.method !== undefined ? message.id : null;
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: "POST",
        headers: {
          ...this.headers(),
          ...mirrored(message),
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify(message),
        signal: this.stop.signal,
      });
    } catch (error) {
      if (id !== null && !this.stop.signal.aborted) {
        this.options.fail(id, `cannot reach ${this.where()}: ${causeOf(error)}`);
      }
      return;
    }
    const session = response.headers.get("mcp-session-id");
    if (session) this.session = session;
    if (response.status === 404 && this.session && !retried && message.method !== "initialize") {
      // The server ended the session: a new one, then this message again.
      await response.body?.cancel();
      this.session = null;
      if (await this.options.sessionLost()) return this.send(message, true);
    }
    const challenge = response.headers.get("www-authenticate");
    const wantsAuth =
      response.status === 401 ||
      (response.status === 403 && bearerChallenge(challenge).error === "insufficient_scope");
    if (wantsAuth && this.options.auth) {
      await response.body?.cancel();
      if (attempts >= MAX_AUTH_ATTEMPTS) {
        const why = `${this.where()} still refuses after ${attempts} authorizations (HTTP ${response.status})`;
        if (id !== null) this.options.fail(id, why);
        return;
      }
      try {
        this.authorizing ??= this.options.auth.authorize(challenge).finally(() => {
          this.authorizing = null;
        });
        await this.authorizing;
      } catch (error) {
        const why = `authorization for ${this.where()} failed: ${(error as Error).message}`;
        if (id !== null) this.options.fail(id, why);
        else this.options.log(`[auth] ${why}\n`);
        return;
      }
      return this.send(message, retried, attempts + 1);
    }
    if (!response.ok) {
      const body = (await response.text().catch(() => "")).trim().slice(0, BODY_QUOTE);
      if (id !== null) this.options.fail(id, httpProblem(response.status, this.where(), body));
      else this.options.log(`[http ${response.status}] ${body}\n`);
      return;
    }
    const type = response.headers.get("content-type") ?? "";
    if (response.status === 202 || response.body === null) return;
    if (type.includes("text/event-stream")) return this.readStream(response, id);
    const text = await response.text();
    if (!text.trim()) return;
    try {
      this.options.deliver(JSON.parse(text));
    } catch {
      this.options.log(`[junk] ${text.slice(0, BODY_QUOTE)}\n`);
      if (id !== null) this.options.fail(id, `${this.where()} answered with something not JSON`);
    }
  }

  /**
   * Opens the server's own stream (its requests and notifications) when it offers one;
   * a server without one answers 405, and that is fine.
   */
  async listen(): Promise<void> {
    if (this.listening) return;
    this.listening = true;
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: "GET",
        headers: { ...this.headers(), accept: "text/event-stream" },
        signal: this.stop.signal,
      });
    } catch {
      return;
    }
    if (!response.ok || !(response.headers.get("content-type") ?? "").includes("event-stream")) {
      await response.body?.cancel().catch(() => {});
      return;
    }
    void this.readStream(response, null);
  }

  /** Ends the session (DELETE) and every stream. */
  async close(): Promise<void> {
    if (this.session) {
      await fetch(this.options.url, {
        method: "DELETE",
        headers: this.headers(),
        signal: AbortSignal.timeout(2_000),
      }).catch(() => {});
    }
    this.stop.abort();
  }

  private headers(): Record<string, string> {
    return {
      ...this.options.headers,
      ...this.options.auth?.headers(),
      ...(this.session ? { "mcp-session-id": this.session } : {}),
      ...(this.protocol ? { "mcp-protocol-version": this.protocol } : {}),
    };
  }

  /** Where the server is, as messages name it: its URL without query or credentials. */
  private where(): string {
    try {
      const url = new URL(this.options.url);
      return `${url.origin}${url.pathname}`;
    } catch {
      return "the server";
    }
  }

  /**
   * Reads an SSE stream, delivering each message. For a request (`id`), the stream ends
   * with its response; one that drops before that is resumed from the last event id.
   */
  private async readStream(response: Response, id: number | null): Promise<void> {
    let lastId: string | undefined;
    let retry = DEFAULT_RETRY_MS;
    let answered = false;
    const onEvent = (event: SseEvent) => {
      if (event.id !== undefined) lastId = event.id;
      if (event.retry !== undefined) retry = event.retry;
      if (!event.data.trim()) return; // a priming event: an id, and nothing to deliver
      let message: { id?: unknown; method?: unknown };
      try {
        message = JSON.parse(event.data);
      } catch {
        this.options.log(`[junk event] ${event.data.slice(0, BODY_QUOTE)}\n`);
        return;
      }
      if (id !== null && message?.id === id && message.method === undefined) answered = true;
      this.options.deliver(message);
    };
    for (let attempt = 0; ; attempt++) {
      try {
        await readEvents(response, onEvent);
      } catch {
        // A dropped connection: the same as an early end, below.
      }
      if (id === null || answered || this.stop.signal.aborted) return;
      if (lastId === undefined || attempt >= RESUME_ATTEMPTS) {
        this.options.fail(id, `${this.where()} closed the stream before answering`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, retry));
      try {
        response = await fetch(this.options.url, {
          method: "GET",
          headers: { ...this.headers(), accept: "text/event-stream", "last-event-id": lastId },
          signal: this.stop.signal,
        });
      } catch (error) {
        this.options.fail(id, `cannot resume the stream from ${this.where()}: ${causeOf(error)}`);
        return;
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        this.options.fail(id, `${httpProblem(response.status, this.where(), "")} (resuming)`);
        return;
      }
    }
  }
}

/** The fields of a message a modern server reads from headers: its method, and what it names. */
const NAMED_BY: Record<string, string> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
};

function mirrored(message: { method?: unknown; params?: unknown }): Record<string, string> {
  if (typeof message.method !== "string") return {};
  const field = NAMED_BY[message.method];
  const named = field
    ? (message.params as Record<string, unknown> | undefined)?.[field]
    : undefined;
  return {
    "mcp-method": message.method,
    ...(typeof named === "string" ? { "mcp-name": headerValue(named) } : {}),
  };
}

/** A value as a header carries it: as it is when plain ASCII, else Base64 between `=?base64?` and `?=`. */
function headerValue(value: string): string {
  if (/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)) return value;
  return `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`;
}

/** Parses `text/event-stream` as the HTML standard does: fields, a blank line ends an event. */
async function readEvents(response: Response, onEvent: (event: SseEvent) => void): Promise<void> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  let event: SseEvent = { data: "" };
  let hasData = false;
  const line = (raw: string) => {
    if (raw === "") {
      if (hasData || event.id !== undefined || event.retry !== undefined) onEvent(event);
      event = { data: "" };
      hasData = false;
      return;
    }
    if (raw.startsWith(":")) return; // a comment, often a keep-alive
    const colon = raw.indexOf(":");
    const field = colon === -1 ? raw : raw.slice(0, colon);
    let value = colon === -1 ? "" : raw.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      event.data = hasData ? `${event.data}\n${value}` : value;
      hasData = true;
    } else if (field === "id" && !value.includes("\0")) event.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
  };
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.search(/\r\n|\r|\n/);
    while (end !== -1) {
      const newline = buffer.startsWith("\r\n", end) ? 2 : 1;
      line(buffer.slice(0, end));
      buffer = buffer.slice(end + newline);
      end = buffer.search(/\r\n|\r|\n/);
    }
  }
}

/** An HTTP failure in words: what the status means for an MCP client. */
export function httpProblem(status: number, where: string, body: string): string {
  const said = body ? `: ${body}` : "";
  if (status === 401 || status === 403) {
    return `${where} wants authorization (HTTP ${status})${said}`;
  }
  if (status === 404) return `no MCP endpoint at ${where} (HTTP 404)${said}`;
  if (status >= 500) return `${where} failed (HTTP ${status})${said}`;
  return `${where} refused the request (HTTP ${status})${said}`;
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
