/**
 * The MCP client (s14): one connection to one server, spoken by hand over stdio or HTTP.
 *
 *   stdio  spawn the server (own process group, no API credentials in its environment);
 *          each line on stdin/stdout is one JSON-RPC 2.0 message; stderr and junk go to a log
 *   http   a remote server at a URL: each message one POST (mcp-http.ts)
 *
 *   which era?  server/discover ──DiscoverResult (or -32022)──> modern: no handshake, every
 *               │                                               request carries its _meta
 *               └─any other error, or silence for 3 s────────> legacy: initialize,
 *                                                                notifications/initialized
 *                 (a late DiscoverResult, before initialize is refused, still means modern)
 *   then tools/list, page after page; later tools/call, one at a time or several at once
 *
 * The MCP revision 2026-07-28 dropped the `initialize` handshake: every request says which
 * revision it speaks and what the client can do, so a server keeps no session. Servers
 * written before it only know the handshake, so a client that must talk to both probes
 * first and falls back, as the revision's versioning page describes for stdio, and keeps
 * the answer for the life of that server process.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { killGroup, trackChild } from "shared";
import { type AuthOptions, OAuth } from "./mcp-auth.ts";
import { HttpWire } from "./mcp-http.ts";

export const MODERN_VERSION = "2026-07-28";
export const LEGACY_VERSION = "2025-11-25";
/** The handshake answers a legacy server may give. */
export const LEGACY_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
export const PROBE_TIMEOUT_MS = 3_000;
export const CONNECT_TIMEOUT_MS = 30_000;
export const CALL_TIMEOUT_MS = 60_000;
/** How long a server has to exit after SIGTERM before SIGKILL. */
export const CLOSE_GRACE_MS = 500;
export const CLIENT_INFO = { name: "learn-harness", version: "14.0.0" };
const META = {
  version: "io.modelcontextprotocol/protocolVersion",
  capabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
};
/** UnsupportedProtocolVersionError: a modern server that wants another revision. */
const UNSUPPORTED_VERSION = -32022;

/** A server the harness starts and speaks to over its stdin and stdout. */
export interface StdioServer {
  name: string;
  type?: "stdio";
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** A server at a URL, spoken to with Streamable HTTP. */
export interface HttpServer {
  name: string;
  type: "http";
  url: string;
  /** Sent with every request (an Authorization header, say): never logged. */
  headers: Record<string, string>;
  /** A client registered beforehand with its authorization server (`oauth.clientId`). */
  client?: { id: string; secret?: string };
}

export type ServerConfig = StdioServer | HttpServer;

export interface Era {
  kind: "modern" | "legacy";
  version: string;
}

/** A tool as a server lists it (MCP's field names). */
export interface McpTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: unknown;
}

/** Why a request failed: the server's JSON-RPC error, a timeout, the server's exit. */
export class McpError extends Error {
  readonly code: number | undefined;
  readonly data: unknown;
  constructor(message: string, code?: number, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export interface ConnectionOptions {
  workdir: string;
  /** The harness's environment; the API credentials are taken out of it. */
  env: Record<string, string | undefined>;
  /** Where the server's stderr and unreadable lines go. */
  logFile: string;
  probeTimeoutMs?: number;
  connectTimeoutMs?: number;
  callTimeoutMs?: number;
  /** Called once if the server exits while connected. */
  onExit?(reason: string): void;
  /**
   * Answers a server's `elicitation/create` (a question for the user). Given, the client
   * declares the elicitation capability; absent, such requests are refused.
   */
  elicit?(request: Elicitation): Promise<ElicitResult>;
  /** How an HTTP server that answers 401 is signed in to (mcp-auth.ts); absent: it is not. */
  auth?: AuthOptions;
}

/** What a server asks the user (`elicitation/create`, form mode). */
export interface Elicitation {
  message: string;
  /** A flat object schema: each property a string, number, integer, boolean or enum. */
  requestedSchema: { properties?: Record<string, Record<string, unknown>>; required?: string[] };
}

export interface ElicitResult {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, unknown>;
}

type Pending = { resolve(value: unknown): void; reject(error: Error): void };

/** What an interrupted call rejects with (the loop ends the turn on it). */
function abortError(): Error {
  const abort = new Error("The turn was interrupted.");
  abort.name = "AbortError";
  return abort;
}

export class McpConnection {
  readonly config: ServerConfig;
  era: Era | null = null;
  tools: McpTool[] = [];
  /** Why the server is gone, once it is. */
  exited: string | null = null;
  private readonly options: ConnectionOptions;
  /** The server's process (stdio), or its HTTP transport. */
  private readonly child: ChildProcess | null = null;
  private readonly http: HttpWire | null = null;
  /** An HTTP server's authorization, when the harness can sign in. */
  readonly auth: OAuth | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buffer = "";
  /** A deliberate close is not a crash to report. */
  private closing = false;

  private constructor(config: ServerConfig, options: ConnectionOptions) {
    this.config = config;
    this.options = options;
    if (config.type === "http") {
      if (options.auth) this.auth = new OAuth(config.url, options.auth);
      this.http = new HttpWire({
        ...(this.auth ? { auth: this.auth } : {}),
        url: config.url,
        headers: config.headers,
        deliver: (message) => this.handleMessage(message, JSON.stringify(message)),
        fail: (id, reason) => this.pending.get(id)?.reject(new McpError(reason)),
        sessionLost: async () => {
          try {
            this.era = await this.initialize();
            return true;
          } catch {
            return false;
          }
        },
        log: (text) => this.log(text),
      });
      return;
    }
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(options.env)) {
      if (value !== undefined && key !== "ANTHROPIC_API_KEY" && key !== "ANTHROPIC_AUTH_TOKEN") {
        env[key] = value;
      }
    }
    const child = spawn(config.command, config.args, {
      cwd: options.workdir,
      env: { ...env, ...config.env },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    this.child = child;
    trackChild(child);
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => this.receive(chunk));
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => this.log(chunk));
    child.stdin?.on("error", () => {}); // a server that exits mid-write: 'exit' reports it
    child.once("error", (error) => this.gone(`could not start: ${error.message}`));
    child.once("exit", (code, signal) =>
      this.gone(`server '${config.name}' exited (code ${code}, signal ${signal})`),
    );
  }

  /** Starts the server, finds its era and lists its tools, all within the connect timeout. */
  static async open(config: ServerConfig, options: ConnectionOptions): Promise<McpConnection> {
    const connection = new McpConnection(config, options);
    const limit = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new McpError(`no answer within ${limit} ms`)), limit);
    });
    try {
      await Promise.race([connection.start(), timeout]);
      return connection;
    } catch (error) {
      await connection.close();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private async start(): Promise<void> {
    this.era = await this.detectEra();
    if (this.http) {
      this.http.protocol = this.era.version;
      // A legacy server may send its own requests on a stream of their own.
      if (this.era.kind === "legacy") void this.http.listen();
    }
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = (await this.request("tools/list", cursor ? { cursor } : {})) as {
        tools?: McpTool[];
        nextCursor?: string;
      };
      tools.push(...(page.tools ?? []));
      cursor = page.nextCursor;
    } while (cursor);
    this.tools = tools;
  }

  /**
   * The probe: modern if the server knows server/discover, legacy otherwise. Silence is
   * not an answer: a server still starting (npx fetching a package, a busy machine)
   * answers late, and its late answer still counts.
   */
  private async detectEra(): Promise<Era> {
    const probe = this.options.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
    let late: unknown;
    // Over HTTP the revision is a header too, which is how a server tells the eras apart.
    if (this.http) this.http.protocol = MODERN_VERSION;
    const discover = this.send("server/discover", {}, MODERN_VERSION);
    discover.then(
      (found) => {
        late = found;
      },
      () => {}, // a refusal, or the server's exit, is read below or by initialize
    );
    let timer: NodeJS.Timeout | undefined;
    const silence = new Promise<"silence">((resolve) => {
      timer = setTimeout(() => resolve("silence"), probe);
    });
    try {
      const answer = await Promise.race([discover, silence]);
      if (answer !== "silence") return { kind: "modern", version: pickModern(answer) };
    } catch (error) {
      if (error instanceof McpError && error.code === UNSUPPORTED_VERSION) {
        const version = pickModern({ supportedVersions: supportedOf(error.data) });
        await this.send("server/discover", {}, version, probe);
        return { kind: "modern", version };
      }
      if (this.exited) throw error;
      // Any other error: a server from before 2026-07-28.
    } finally {
      clearTimeout(timer);
    }
    if (this.http) this.http.protocol = null;
    try {
      return await this.initialize();
    } catch (error) {
      // A server answers in order: a modern one that was slow to start has answered the
      // probe by the time it refuses the handshake.
      if (late !== undefined) return { kind: "modern", version: pickModern(late) };
      throw error;
    }
  }

  private async initialize(): Promise<Era> {
    const init = (await this.send("initialize", {
      protocolVersion: LEGACY_VERSION,
      capabilities: this.capabilities(),
      clientInfo: CLIENT_INFO,
    })) as { protocolVersion?: unknown };
    const version = String(init.protocolVersion);
    if (!LEGACY_VERSIONS.includes(version)) {
      throw new McpError(
        `the server answered protocol version ${version}; this client speaks ${MODERN_VERSION} and ${LEGACY_VERSIONS.join(", ")}`,
      );
    }
    if (this.http) this.http.protocol = version;
    this.notify("notifications/initialized");
    return { kind: "legacy", version };
  }

  /** One request in this connection's era (modern ones carry their _meta). */
  request(method: string, params: Record<string, unknown>, timeoutMs?: number): Promise<unknown> {
    const version = this.era?.kind === "modern" ? this.era.version : null;
    return this.send(method, params, version, timeoutMs);
  }

  /**
   * tools/call; a timeout, or the turn's `signal` aborting (Ctrl-C), tells the server
   * to stop (notifications/cancelled) and the call fails at once.
   */
  callTool(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<unknown> {
    const version = this.era?.kind === "modern" ? this.era.version : null;
    return this.send(
      "tools/call",
      { name, arguments: args },
      version,
      this.options.callTimeoutMs ?? CALL_TIMEOUT_MS,
      signal,
    );
  }

  private send(
    method: string,
    params: Record<string, unknown>,
    modern: string | null = null,
    timeoutMs?: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (this.exited) return Promise.reject(new McpError(this.exited));
    const id = this.nextId++;
    const withMeta = modern
      ? {
          ...params,
          _meta: {
            [META.version]: modern,
            [META.capabilities]: this.capabilities(),
            [META.clientInfo]: CLIENT_INFO,
          },
        }
      : params;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (fn: () => void) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.pending.delete(id);
        fn();
      };
      const onAbort = () => {
        settle(() => reject(abortError()));
        this.notify("notifications/cancelled", {
          requestId: id,
          reason: "interrupted by the user",
        });
      };
      this.pending.set(id, {
        resolve: (value) => settle(() => resolve(value)),
        reject: (error) => settle(() => reject(error)),
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          settle(() => reject(new McpError(`${method} timed out after ${timeoutMs} ms`)));
          if (method === "tools/call") {
            this.notify("notifications/cancelled", { requestId: id, reason: "timed out" });
          }
        }, timeoutMs);
      }
      // Interrupted before it was sent: there is nothing for the server to stop.
      if (signal?.aborted) return settle(() => reject(abortError()));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.write({ jsonrpc: "2.0", id, method, params: withMeta });
    });
  }

  private notify(method: string, params?: Record<string, unknown>): void {
    this.write({ jsonrpc: "2.0", method, ...(params ? { params } : {}) });
  }

  /** One whole line per message (Node writes them in order), or one POST. */
  private write(message: object): void {
    if (this.exited) return;
    if (this.http) void this.http.send(message);
    else this.child?.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let newline = this.buffer.indexOf("\n");
    while (newline !== -1) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (line) this.handle(line);
      newline = this.buffer.indexOf("\n");
    }
  }

  private handle(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.log(`[junk] ${line}\n`);
      return;
    }
    this.handleMessage(message, line);
  }

  /** One message from the server: a request of its own, or the answer to one of ours. */
  private handleMessage(parsed: unknown, line: string): void {
    const message = parsed as Record<string, unknown>;
    if (typeof message !== "object" || message === null || message.jsonrpc !== "2.0") {
      this.log(`[junk] ${line}\n`);
      return;
    }
    if (typeof message.method === "string") {
      if (message.id !== undefined) void this.serve(message.id, message.method, message.params);
      return;
    }
    const waiting = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
    if (!waiting) {
      this.log(`[unmatched] ${line}\n`);
      return;
    }
    const error = message.error as { code?: number; message?: string; data?: unknown } | undefined;
    if (error) {
      waiting.reject(new McpError(`${error.code} ${error.message}`, error.code, error.data));
    } else waiting.resolve(message.result ?? {});
  }

  /** What this client can do for a server: elicitation, when someone can answer. */
  private capabilities(): Record<string, unknown> {
    return this.options.elicit ? { elicitation: { form: {} } } : {};
  }

  /**
   * A request from the server: `ping`, and `elicitation/create` when someone can answer;
   * everything else (sampling, roots …) is refused, as the declared capabilities say. A
   * failing answer is an error reply, never a crash.
   */
  private async serve(id: unknown, method: string, params: unknown): Promise<void> {
    const reply = (body: { result: unknown } | { error: { code: number; message: string } }) =>
      this.write({ jsonrpc: "2.0", id, ...body });
    if (method === "ping") return reply({ result: {} });
    if (method === "elicitation/create" && this.options.elicit) {
      const request = params as Partial<Elicitation> | undefined;
      if (typeof request?.message !== "string" || typeof request.requestedSchema !== "object") {
        const message = "elicitation/create needs a message and a requestedSchema";
        return reply({ error: { code: -32602, message } });
      }
      try {
        return reply({ result: await this.options.elicit(request as Elicitation) });
      } catch (error) {
        return reply({ error: { code: -32603, message: (error as Error).message } });
      }
    }
    reply({ error: { code: -32601, message: `Method not found: ${method}` } });
  }

  private gone(reason: string): void {
    if (this.exited) return;
    this.exited = reason;
    for (const waiting of [...this.pending.values()]) waiting.reject(new McpError(reason));
    if (!this.closing) this.options.onExit?.(reason);
  }

  private log(text: string): void {
    try {
      appendFileSync(this.options.logFile, text);
    } catch {
      // The log is a convenience; a full disk must not end the connection.
    }
  }

  /**
   * stdio: closes stdin, then SIGTERM to the group, then SIGKILL after the grace period.
   * HTTP: ends the session; pending requests fail.
   */
  async close(): Promise<void> {
    if (!this.child) {
      this.closing = true;
      await this.http?.close();
      this.gone(`server '${this.config.name}' closed`);
      return;
    }
    const child = this.child;
    const ended = this.exited
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once("exit", () => resolve()));
    this.closing = true;
    child.stdin?.end();
    if (!this.exited) killGroup(child, "SIGTERM");
    const grace = new Promise<void>((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref());
    await Promise.race([ended, grace]);
    if (!this.exited) killGroup(child, "SIGKILL");
  }
}

/** The answer a form gets when every field keeps its default: what a user who just accepts sends. */
export function elicitationDefaults(request: Elicitation): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(request.requestedSchema.properties ?? {})) {
    if (field.default !== undefined) content[name] = field.default;
  }
  return content;
}

function supportedOf(data: unknown): string[] {
  const list = (data as { supported?: unknown } | undefined)?.supported;
  return Array.isArray(list) ? list.filter((v): v is string => typeof v === "string") : [];
}

/** The newest modern revision both sides speak (this client speaks one). */
function pickModern(result: unknown): string {
  const versions = (result as { supportedVersions?: unknown }).supportedVersions;
  const list = Array.isArray(versions) ? versions : [];
  if (list.includes(MODERN_VERSION)) return MODERN_VERSION;
  throw new McpError(
    `the server speaks ${list.join(", ") || "no listed revision"}; this client speaks ${MODERN_VERSION} and ${LEGACY_VERSIONS.join(", ")}`,
  );
}
