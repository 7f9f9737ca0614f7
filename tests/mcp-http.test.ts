/**
 * MCP over Streamable HTTP, against every chapter from s14: the client against a server
 * written here (JSON and SSE answers, sessions and their headers, a dropped stream resumed
 * with Last-Event-ID, junk events, a session the server forgets, HTTP errors, a server too
 * slow to answer), interop with the official TypeScript SDK's HTTP handler, `.mcp.json`'s
 * http entries, and through the chapter a remote server's tool called with a header whose
 * token never reaches the model or the logs.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { nullLog } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type * as McpModule from "../chapters/s14-mcp/src/mcp.ts";
import type * as AuthModule from "../chapters/s14-mcp/src/mcp-auth.ts";
import type * as CliModule from "../chapters/s14-mcp/src/mcp-cli.ts";
import type * as ClientModule from "../chapters/s14-mcp/src/mcp-client.ts";
import type * as ConfigModule from "../chapters/s14-mcp/src/mcp-config.ts";
import { carried, chaptersFrom, importChapter, moduleVersions } from "./chapters.ts";
import { lastToolResults, runChapter, tempWorkspace, userSaid } from "./helpers/run.ts";

interface Seen {
  method: string;
  rpc?: string;
  params?: unknown;
  headers: http.IncomingHttpHeaders;
}

interface Behaviour {
  /** Answer requests as SSE instead of JSON. */
  sse?: boolean;
  /** tools/call: prime the stream, send junk, then drop it; the answer comes on resume. */
  dropOnce?: boolean;
  /** Forget the session after this many tools/call answers (the next gets 404). */
  forgetAfter?: number;
  /** tools/call answers with this status instead. */
  callStatus?: number;
  /** tools/call waits this long before answering. */
  slowMs?: number;
  /** tools/call first asks the client: sampling, then a form with defaults, on its stream. */
  askOnCall?: boolean;
}

/** A legacy (2025-11-25) Streamable HTTP server with one tool, `echo`. */
async function legacyServer(behaviour: Behaviour = {}) {
  const seen: Seen[] = [];
  let session = 0;
  let calls = 0;
  let held: { id: unknown; text: string } | null = null;
  /** The client's answers to the server's own requests, by id. */
  const answers = new Map<unknown, unknown>();
  let asking: { res: http.ServerResponse; id: unknown } | null = null;
  const answer = (res: http.ServerResponse, message: object, sse: boolean, headers = {}) => {
    if (sse) {
      res.writeHead(200, { "content-type": "text/event-stream", ...headers });
      res.end(`id: a${session}\ndata: ${JSON.stringify(message)}\n\n`);
    } else {
      res.writeHead(200, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(message));
    }
  };
  const server = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    type Rpc = {
      id?: unknown;
      method?: string;
      params?: { arguments?: { text?: unknown }; capabilities?: unknown };
    };
    const rpc: Rpc = body ? JSON.parse(body) : {};
    seen.push({ method: req.method!, rpc: rpc.method, params: rpc.params, headers: req.headers });
    if (req.method === "DELETE") return res.writeHead(200).end();
    if (req.method === "GET") {
      if (req.headers["last-event-id"] === "p1" && held) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const result = { content: [{ type: "text", text: `echo: ${held.text}` }] };
        return res.end(
          `id: p2\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: held.id, result })}\n\n`,
        );
      }
      return res.writeHead(405).end();
    }
    if (rpc.id === undefined) return res.writeHead(202).end();
    if (rpc.method === undefined) {
      // The client's answer to one of the server's requests.
      answers.set(rpc.id, rpc);
      res.writeHead(202).end();
      if (asking && answers.has("sample") && answers.has("form")) {
        const form = answers.get("form") as { result?: { content?: Record<string, unknown> } };
        const result = { content: [{ type: "text", text: `hello ${form.result?.content?.name}` }] };
        asking.res.end(`data: ${JSON.stringify({ jsonrpc: "2.0", id: asking.id, result })}\n\n`);
        asking = null;
      }
      return;
    }
    if (rpc.method === "initialize") {
      session++;
      const result = {
        protocolVersion: "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "legacy-http", version: "1" },
      };
      return answer(res, { jsonrpc: "2.0", id: rpc.id, result }, !!behaviour.sse, {
        "mcp-session-id": `s${session}`,
      });
    }
    if (req.headers["mcp-session-id"] !== `s${session}`) {
      const status = req.headers["mcp-session-id"] ? 404 : 400;
      res.writeHead(status, { "content-type": "application/json" });
      return res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: rpc.id ?? null,
          error: { code: -32000, message: "Bad session" },
        }),
      );
    }
    if (rpc.method === "tools/list") {
      const tools = [
        { name: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
      ];
      return answer(res, { jsonrpc: "2.0", id: rpc.id, result: { tools } }, !!behaviour.sse);
    }
    if (rpc.method === "tools/call") {
      calls++;
      if (behaviour.callStatus) return res.writeHead(behaviour.callStatus).end("upstream broke");
      if (behaviour.askOnCall) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const ask = (id: string, method: string, params: object) =>
          res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n\n`);
        ask("sample", "sampling/createMessage", { messages: [], maxTokens: 10 });
        ask("form", "elicitation/create", {
          message: "Who are you?",
          requestedSchema: {
            type: "object",
            properties: { name: { type: "string", default: "Ann" }, age: { type: "integer" } },
          },
        });
        asking = { res, id: rpc.id };
        return;
      }
      if (behaviour.slowMs) await new Promise((r) => setTimeout(r, behaviour.slowMs));
      const said = String(rpc.params?.arguments?.text ?? "");
      if (behaviour.dropOnce && !held) {
        held = { id: rpc.id, text: said };
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("id: p1\nretry: 10\ndata: \n\n");
        res.write("data: {not json\n\n");
        return res.end();
      }
      if (behaviour.forgetAfter !== undefined && calls > behaviour.forgetAfter && session === 1) {
        session++; // the old session is gone; a new initialize gets s3
        res.writeHead(404).end();
        return;
      }
      const result = { content: [{ type: "text", text: `echo: ${said}` }] };
      return answer(res, { jsonrpc: "2.0", id: rpc.id, result }, !!behaviour.sse);
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        jsonrpc: "2.0",
        id: rpc.id,
        error: { code: -32601, message: "Method not found" },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, seen, answers, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The official SDK's HTTP handler (both eras) behind node:http, on 127.0.0.1 only. */
async function sdkServer() {
  const handler = createMcpHandler(() => {
    const server = new McpServer(
      { name: "sdk-http", version: "1.0.0" },
      { capabilities: { tools: {} } },
    );
    server.registerTool(
      "echo",
      { description: "Echo the text back.", inputSchema: z.object({ text: z.string() }) },
      async ({ text }) => ({ content: [{ type: "text", text: `sdk echo: ${text}` }] }),
    );
    return server;
  });
  const server = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const url = `http://${req.headers.host}${req.url}`;
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) {
      if (typeof value === "string") headers.set(key, value);
    }
    const init: RequestInit = { method: req.method, headers };
    if (body) init.body = body;
    const response = await handler.fetch(new Request(url, init));
    const out: Record<string, string> = {};
    response.headers.forEach((value, key) => {
      out[key] = value;
    });
    res.writeHead(response.status, out);
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

interface AuthBehaviour {
  /** tools/call needs this scope as well (403 insufficient_scope until a token has it). */
  stepUp?: string;
  /** Never grant stepUp: every tools/call answers 403. */
  neverEnough?: boolean;
  /** No registration endpoint; the token endpoint takes client_secret_basic only. */
  preRegistered?: boolean;
  /** /authorize answers with another state. */
  wrongState?: boolean;
}

/** An MCP server that wants a bearer token, with its own authorization server, on one port. */
async function protectedServer(behaviour: AuthBehaviour = {}) {
  const seen: Array<{ path: string; query: Record<string, string>; body: string; auth?: string }> =
    [];
  const tokens = new Map<string, string[]>();
  let challenge = "";
  let scopes: string[] = [];
  const server = http.createServer(async (req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const url = new URL(req.url ?? "/", base);
    let body = "";
    for await (const chunk of req) body += chunk;
    const query = Object.fromEntries(url.searchParams);
    seen.push({ path: url.pathname, query, body, auth: req.headers.authorization });
    const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(value));
    };
    const metadata = `${base}/.well-known/oauth-protected-resource/mcp`;
    switch (url.pathname) {
      case "/.well-known/oauth-protected-resource/mcp":
        return json(200, {
          resource: `${base}/mcp`,
          authorization_servers: [base],
          scopes_supported: ["mcp:read"],
        });
      case "/.well-known/oauth-authorization-server":
        return json(200, {
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          ...(behaviour.preRegistered ? {} : { registration_endpoint: `${base}/register` }),
          token_endpoint_auth_methods_supported: behaviour.preRegistered
            ? ["client_secret_basic"]
            : ["none"],
          code_challenge_methods_supported: ["S256"],
        });
      case "/register":
        return json(201, { client_id: "dyn-client" });
      case "/authorize": {
        challenge = query.code_challenge ?? "";
        scopes = (query.scope ?? "").split(" ").filter(Boolean);
        const state = behaviour.wrongState ? "forged" : query.state;
        res.writeHead(302, { location: `${query.redirect_uri}?code=c1&state=${state}` });
        return res.end();
      }
      case "/token": {
        const form = new URLSearchParams(body);
        const verifier = form.get("code_verifier") ?? "";
        const proof = createHash("sha256").update(verifier).digest("base64url");
        if (proof !== challenge) return json(400, { error: "invalid_grant" });
        const token = `tok-${tokens.size + 1}`;
        tokens.set(token, scopes);
        return json(200, { access_token: token, token_type: "Bearer" });
      }
      case "/mcp": {
        const token = req.headers.authorization?.replace(/^Bearer /, "") ?? "";
        if (!tokens.has(token)) {
          return json(
            401,
            { error: "invalid_token" },
            { "www-authenticate": `Bearer resource_metadata="${metadata}"` },
          );
        }
        // Its own stream (GET) it does not offer; the end of a session (DELETE) is fine.
        if (req.method !== "POST") return res.writeHead(req.method === "DELETE" ? 200 : 405).end();
        const rpc = JSON.parse(body) as { id?: unknown; method?: string };
        if (rpc.id === undefined) return res.writeHead(202).end();
        const want = behaviour.stepUp;
        if (
          rpc.method === "tools/call" &&
          want &&
          (behaviour.neverEnough || !tokens.get(token)!.includes(want))
        ) {
          return json(
            403,
            { error: "insufficient_scope" },
            {
              "www-authenticate": `Bearer error="insufficient_scope", scope="${want}", resource_metadata="${metadata}"`,
            },
          );
        }
        const results: Record<string, unknown> = {
          initialize: {
            protocolVersion: "2025-11-25",
            capabilities: { tools: {} },
            serverInfo: { name: "p", version: "1" },
          },
          "tools/list": { tools: [{ name: "secret", inputSchema: { type: "object" } }] },
          "tools/call": { content: [{ type: "text", text: "the secret" }] },
        };
        const result = results[rpc.method ?? ""];
        if (!result)
          return json(200, {
            jsonrpc: "2.0",
            id: rpc.id,
            error: { code: -32601, message: "Method not found" },
          });
        return json(200, { jsonrpc: "2.0", id: rpc.id, result });
      }
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const HTTP = moduleVersions("s14", [
  "mcp-client.ts",
  "mcp-http.ts",
  "mcp-config.ts",
  "mcp-cli.ts",
  "mcp-auth.ts",
]);

describe.each(HTTP)("$id MCP over HTTP: the client", (chapter) => {
  let client: typeof ClientModule;
  beforeAll(async () => {
    client = await importChapter<typeof ClientModule>(chapter, "mcp-client.ts");
  });
  const open = (url: string, options: Partial<ClientModule.ConnectionOptions> = {}) => {
    const workdir = tempWorkspace("mcp-http");
    const logFile = path.join(workdir, "server.log");
    const config = {
      name: "remote",
      type: "http" as const,
      url,
      headers: { authorization: "Bearer secret-token" },
    };
    return {
      logFile,
      connection: client.McpConnection.open(config, {
        workdir,
        env: {},
        logFile,
        probeTimeoutMs: 2000,
        ...options,
      }),
    };
  };

  it("speaks the 2025-11-25 handshake with JSON answers: session and version headers on every request, DELETE at the end", async () => {
    const server = await legacyServer();
    try {
      const c = await open(server.url).connection;
      expect(c.era).toEqual({ kind: "legacy", version: "2025-11-25" });
      expect(c.tools.map((t) => t.name)).toEqual(["echo"]);
      expect(await c.callTool("echo", { text: "hi" })).toEqual({
        content: [{ type: "text", text: "echo: hi" }],
      });
      await c.close();
      const list = server.seen.find((s) => s.rpc === "tools/list")!;
      expect(list.headers["mcp-session-id"]).toBe("s1");
      expect(list.headers["mcp-protocol-version"]).toBe("2025-11-25");
      expect(list.headers.accept).toBe("application/json, text/event-stream");
      expect(server.seen.every((s) => s.headers.authorization === "Bearer secret-token")).toBe(
        true,
      );
      expect(server.seen.at(-1)).toMatchObject({ method: "DELETE" });
      expect(server.seen.at(-1)!.headers["mcp-session-id"]).toBe("s1");
    } finally {
      await server.close();
    }
  });

  it("reads SSE answers; a stream dropped before the answer is resumed with Last-Event-ID; junk events are logged", async () => {
    const server = await legacyServer({ sse: true, dropOnce: true });
    try {
      const { connection, logFile } = open(server.url);
      const c = await connection;
      expect(await c.callTool("echo", { text: "again" })).toEqual({
        content: [{ type: "text", text: "echo: again" }],
      });
      await c.close();
      const resume = server.seen.find((s) => s.method === "GET" && s.headers["last-event-id"]);
      expect(resume?.headers["last-event-id"]).toBe("p1");
      expect(readFileSync(logFile, "utf8")).toContain("[junk event] {not json");
    } finally {
      await server.close();
    }
  });

  it("starts a new session once when the server forgets it (404), and the call goes through", async () => {
    const server = await legacyServer({ forgetAfter: 1 });
    try {
      const c = await open(server.url).connection;
      await c.callTool("echo", { text: "one" });
      expect(await c.callTool("echo", { text: "two" })).toEqual({
        content: [{ type: "text", text: "echo: two" }],
      });
      await c.close();
      expect(server.seen.filter((s) => s.rpc === "initialize")).toHaveLength(2);
      expect(server.seen.at(-1)!.headers["mcp-session-id"]).toBe("s3");
    } finally {
      await server.close();
    }
  });

  it.each([
    [500, "failed (HTTP 500): upstream broke"],
    [401, "wants authorization (HTTP 401)"],
    [403, "wants authorization (HTTP 403)"],
  ])(
    "turns HTTP %i on a call into an error that says so; the connection stays",
    async (status, said) => {
      const server = await legacyServer({ callStatus: status });
      try {
        const c = await open(server.url).connection;
        await expect(c.callTool("echo", { text: "x" })).rejects.toThrow(said);
        expect((await c.request("tools/list", {})) as object).toHaveProperty("tools");
        await c.close();
      } finally {
        await server.close();
      }
    },
  );

  it("names a server it cannot reach, and a call the server answers too late", async () => {
    const gone = await legacyServer();
    await gone.close();
    await expect(open(gone.url, { probeTimeoutMs: 500 }).connection).rejects.toThrow(
      /cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp: ECONNREFUSED/,
    );
    const slow = await legacyServer({ slowMs: 1500 });
    try {
      const c = await open(slow.url, { callTimeoutMs: 200 }).connection;
      await expect(c.callTool("echo", { text: "x" })).rejects.toThrow(
        "tools/call timed out after 200 ms",
      );
      await c.close();
    } finally {
      await slow.close();
    }
  });

  it("answers a server's own requests on the call's stream: a form through elicit, sampling refused", async () => {
    const server = await legacyServer({ askOnCall: true, sse: true });
    try {
      const asked: unknown[] = [];
      const c = await open(server.url, {
        elicit: async (request) => {
          asked.push(request.message);
          return { action: "accept", content: client.elicitationDefaults(request) };
        },
      }).connection;
      expect(await c.callTool("echo", { text: "x" })).toEqual({
        content: [{ type: "text", text: "hello Ann" }],
      });
      await c.close();
      expect(asked).toEqual(["Who are you?"]);
      // Only a client that can answer says it can.
      const init = server.seen.find((s) => s.rpc === "initialize")!;
      expect(init.params).toMatchObject({ capabilities: { elicitation: { form: {} } } });
      expect(server.answers.get("form")).toMatchObject({
        result: { action: "accept", content: { name: "Ann" } },
      });
      expect(server.answers.get("sample")).toMatchObject({
        error: { code: -32601, message: "Method not found: sampling/createMessage" },
      });
    } finally {
      await server.close();
    }
  });

  it("runs as the conformance suite's client: a scenario it knows, or a clear refusal", async () => {
    const cli = await importChapter<typeof CliModule>(chapter, "mcp-cli.ts");
    const server = await legacyServer();
    try {
      expect(await cli.main([server.url], { MCP_CONFORMANCE_SCENARIO: "initialize" })).toBe(0);
      expect(server.seen.some((s) => s.rpc === "tools/list")).toBe(true);
      expect(await cli.main([server.url], { MCP_CONFORMANCE_SCENARIO: "resources_read" })).toBe(2);
      expect(await cli.main(["not-a-url"], {})).toBe(2);
      expect(await cli.main([server.url], { MCP_CONFORMANCE_SCENARIO: "tools_call" })).toBe(0);
      expect(server.seen.find((s) => s.rpc === "tools/call")?.params).toMatchObject({
        name: "add_numbers",
        arguments: { a: 5, b: 3 },
      });
      await server.close();
      expect(await cli.main([server.url], {})).toBe(1);
    } finally {
      await server.close();
    }
  });

  describe("authorization", () => {
    let auth: typeof AuthModule;
    beforeAll(async () => {
      auth = await importChapter<typeof AuthModule>(chapter, "mcp-auth.ts");
    });
    const signed = (url: string, extra: Partial<AuthModule.AuthOptions> = {}) => {
      const tokenFile = path.join(tempWorkspace("mcp-auth"), "auth", "token.json");
      const options = { tokenFile, callback: async () => auth.headlessCallback(), ...extra };
      return { tokenFile, connection: open(url, { auth: options }).connection, options };
    };

    it("signs in on a 401: resource and server metadata, registration, PKCE with state and resource, then the bearer; the token kept 0600 and reused", async () => {
      const server = await protectedServer();
      try {
        const { connection, tokenFile, options } = signed(server.url);
        const c = await connection;
        expect(await c.callTool("secret", {})).toEqual({
          content: [{ type: "text", text: "the secret" }],
        });
        await c.close();
        const paths = server.seen.map((s) => s.path);
        expect(paths.slice(0, 6)).toEqual([
          "/mcp",
          "/.well-known/oauth-protected-resource/mcp",
          "/.well-known/oauth-authorization-server",
          "/register",
          "/authorize",
          "/token",
        ]);
        const authorize = server.seen.find((s) => s.path === "/authorize")!.query;
        expect(authorize).toMatchObject({
          response_type: "code",
          client_id: "dyn-client",
          code_challenge_method: "S256",
          resource: server.url,
          scope: "mcp:read",
        });
        expect(authorize.state?.length).toBeGreaterThan(10);
        const token = new URLSearchParams(server.seen.find((s) => s.path === "/token")!.body);
        expect(token.get("client_id")).toBe("dyn-client");
        expect(token.get("resource")).toBe(server.url);
        expect(server.seen.filter((s) => s.path === "/mcp").at(-1)!.auth).toBe("Bearer tok-1");
        expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
        // A new connection starts with the kept token: no second sign-in.
        const again = await open(server.url, { auth: options }).connection;
        await again.close();
        expect(server.seen.filter((s) => s.path === "/authorize")).toHaveLength(1);
      } finally {
        await server.close();
      }
    });

    it("asks for more scope on a 403 insufficient_scope, and gives up after three sign-ins", async () => {
      const server = await protectedServer({ stepUp: "mcp:write" });
      try {
        const c = await signed(server.url).connection;
        expect(await c.callTool("secret", {})).toMatchObject({ content: [{ text: "the secret" }] });
        expect(
          server.seen.filter((s) => s.path === "/authorize").map((s) => s.query.scope),
        ).toEqual(["mcp:read", "mcp:write"]);
        await c.close();
      } finally {
        await server.close();
      }
      const stubborn = await protectedServer({ stepUp: "mcp:write", neverEnough: true });
      try {
        const c = await signed(stubborn.url).connection;
        await expect(c.callTool("secret", {})).rejects.toThrow(
          /still refuses after 3 authorizations \(HTTP 403\)/,
        );
        await c.close();
      } finally {
        await stubborn.close();
      }
    });

    it("uses a pre-registered client with client_secret_basic, and refuses an answer with another state", async () => {
      const server = await protectedServer({ preRegistered: true });
      try {
        const c = await signed(server.url, { client: { id: "pre", secret: "s3cret" } }).connection;
        await c.close();
        expect(server.seen.some((s) => s.path === "/register")).toBe(false);
        const token = server.seen.find((s) => s.path === "/token")!;
        expect(token.auth).toBe(`Basic ${Buffer.from("pre:s3cret").toString("base64")}`);
        expect(new URLSearchParams(token.body).get("client_secret")).toBeNull();
      } finally {
        await server.close();
      }
      const forged = await protectedServer({ wrongState: true });
      try {
        await expect(signed(forged.url).connection).rejects.toThrow(
          /authorization for .* failed: the authorization answer's state does not match: refused/,
        );
        expect(forged.seen.some((s) => s.path === "/token")).toBe(false);
      } finally {
        await forged.close();
      }
    });
  });

  it("works with the official TypeScript SDK's HTTP handler (it answers the modern probe)", async () => {
    const server = await sdkServer();
    try {
      const c = await open(server.url).connection;
      expect(c.era).toEqual({ kind: "modern", version: client.MODERN_VERSION });
      expect(c.tools.map((t) => t.name)).toEqual(["echo"]);
      expect(await c.callTool("echo", { text: "hi" })).toMatchObject({
        content: [{ type: "text", text: "sdk echo: hi" }],
      });
      await c.close();
    } finally {
      await server.close();
    }
  });
});

describe.each(moduleVersions("s14", ["mcp.ts"]))(
  "$id at the terminal: a server's question, a sign-in",
  (chapter) => {
    let mcp: typeof McpModule;
    beforeAll(async () => {
      mcp = await importChapter<typeof McpModule>(chapter, "mcp.ts");
    });
    const form = {
      message: "Deploy where?",
      requestedSchema: {
        properties: {
          region: { type: "string", enum: ["eu", "us"], default: "eu" },
          replicas: { type: "integer", description: "How many" },
          dry: { type: "boolean", default: true },
        },
        required: ["replicas"],
      },
    };
    const servers = (answers: Array<string | null>, isTTY = true) => {
      const printed: string[] = [];
      const asked: string[] = [];
      const instance = new mcp.McpServers({
        plugins: { plugins: [], problems: [] },
        workdir: tempWorkspace("elicit"),
        env: {},
        emit: (event) => printed.push(event.type === "notice" ? event.text : ""),
        log: {} as never,
        agent: () => ({}) as never,
        reader: {
          isTTY,
          ask: async (question: string) => {
            asked.push(question);
            return answers.shift() ?? null;
          },
        } as never,
      });
      return { instance, printed, asked };
    };

    it("asks each field with its type, choices and default, then sends what the user accepts", async () => {
      const { instance, asked, printed } = servers(["", "x", "", "3", "n", "y"]);
      expect(await instance.elicit("deploy", form)).toEqual({
        action: "accept",
        content: { region: "eu", replicas: 3, dry: false },
      });
      expect(printed).toContain("  [mcp] deploy asks: Deploy where?");
      expect(asked[0]).toBe("    region (string, one of eu | us, empty: eu): ");
      expect(asked[1]).toBe("    replicas (How many; integer): ");
      expect(printed).toContain("    x is not an integer");
      expect(printed).toContain("    replicas is required");
      expect(asked.at(-1)).toBe("  Send this to deploy? [y/N, c cancels] ");
    });

    it("signs in at a terminal: the URL shown, the browser offered, the code received on 127.0.0.1", async () => {
      const guarded = await protectedServer();
      const workdir = tempWorkspace("sign-in");
      writeFileSync(
        path.join(workdir, ".mcp.json"),
        JSON.stringify({ mcpServers: { vault: { type: "http", url: guarded.url } } }),
      );
      const printed: string[] = [];
      const asked: string[] = [];
      const instance = new mcp.McpServers({
        plugins: { plugins: [], problems: [] },
        workdir,
        env: {},
        // The test is the user's browser: it opens the URL the terminal shows.
        emit: (event) => {
          const line = event.type === "notice" ? event.text : "";
          printed.push(line);
          if (line.startsWith("  http://127.0.0.1")) void fetch(line.trim());
        },
        log: nullLog(),
        agent: () => ({ tools: new Map() }) as never,
        reader: {
          isTTY: true,
          ask: async (question: string) => {
            asked.push(question);
            return "n";
          },
        } as never,
      });
      try {
        const result = await instance.connect("vault");
        expect(result.content).toMatch(/^Connected to MCP server 'vault'/);
        expect(printed).toContain("  [mcp] vault wants you to sign in: open this URL in a browser");
        expect(asked).toEqual(["  Open it in your browser now? [y/N] "]);
        const redirect = guarded.seen.find((s) => s.path === "/authorize")!.query.redirect_uri!;
        expect(redirect).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
        const kept = path.join(workdir, ".harness", "mcp-auth", "vault.json");
        expect(statSync(kept).mode & 0o777).toBe(0o600);
        expect(instance.describe()).toContain(
          "vault: connected (http, legacy 2025-11-25, token held)",
        );
      } finally {
        await instance.closeAll();
        await guarded.close();
      }
    });

    it("declines with no terminal or in a turn nobody typed, and cancels on c or end of input", async () => {
      const piped = servers([], false);
      expect(await piped.instance.elicit("deploy", form)).toEqual({ action: "decline" });
      expect(piped.printed).toContain("  [mcp] declined: nobody can answer (no terminal)");
      const scheduled = servers([]);
      scheduled.instance.turnKind = "scheduled" as never;
      expect(await scheduled.instance.elicit("deploy", form)).toEqual({ action: "decline" });
      expect(scheduled.printed).toContain("  [mcp] declined: nobody can answer (a scheduled turn)");
      expect(await servers(["", "2", "", "c"]).instance.elicit("d", form)).toEqual({
        action: "cancel",
      });
      expect(await servers([null]).instance.elicit("d", form)).toEqual({ action: "cancel" });
      expect(await servers(["", "2", "", ""]).instance.elicit("d", form)).toEqual({
        action: "decline",
      });
    });
  },
);

describe.each(moduleVersions("s14", ["mcp-config.ts"]))("$id .mcp.json http entries", (chapter) => {
  let config: typeof ConfigModule;
  beforeAll(async () => {
    config = await importChapter<typeof ConfigModule>(chapter, "mcp-config.ts");
  });
  const load = (servers: Record<string, unknown>, env: Record<string, string> = {}) => {
    const workdir = tempWorkspace("mcp-json");
    writeFileSync(path.join(workdir, ".mcp.json"), JSON.stringify({ mcpServers: servers }));
    return config.loadMcpConfig(workdir, env);
  };

  it("reads a pre-registered OAuth client (oauth.clientId, the secret from the environment)", () => {
    const loaded = load(
      {
        vault: {
          type: "http",
          url: "https://vault.example.com/mcp",
          oauth: { clientId: "harness", clientSecret: "${VAULT_SECRET}" },
        },
        bad: { type: "http", url: "https://example.com/mcp", oauth: { clientId: 7 } },
      },
      { VAULT_SECRET: "s3cret" },
    );
    expect(loaded.servers).toEqual([
      {
        name: "vault",
        type: "http",
        url: "https://vault.example.com/mcp",
        headers: {},
        client: { id: "harness", secret: "s3cret" },
      },
    ]);
    expect(loaded.problems).toEqual([
      ".mcp.json: mcpServers.bad.oauth must be an object with a clientId string; server skipped",
    ]);
  });

  it("reads type http with url and headers, ${VAR} expanded; reports sse, a url without type and bad fields", () => {
    const loaded = load(
      {
        remote: {
          type: "http",
          url: "https://mcp.example.com/${PATH_PART}",
          headers: { Authorization: "Bearer ${TOKEN}" },
        },
        old: { type: "sse", url: "https://example.com/sse" },
        untyped: { url: "https://example.com/mcp" },
        nourl: { type: "http" },
        ftp: { type: "http", url: "ftp://example.com" },
        unset: { type: "http", url: "https://example.com", headers: { X: "${MISSING}" } },
        odd: { type: "websocket", url: "wss://example.com" },
      },
      { PATH_PART: "mcp", TOKEN: "t0k3n" },
    );
    expect(loaded.servers).toEqual([
      {
        name: "remote",
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: "Bearer t0k3n" },
      },
    ]);
    expect(loaded.problems).toEqual([
      '.mcp.json: mcpServers.old uses the SSE transport, which MCP replaced with Streamable HTTP; if the server speaks it, write "type": "http"; server skipped',
      '.mcp.json: mcpServers.untyped.type is missing: a server with a url needs "type": "http"; server skipped',
      ".mcp.json: mcpServers.nourl.url must be a non-empty string; server skipped",
      ".mcp.json: mcpServers.ftp.url must be http:// or https:// (ftp:); server skipped",
      ".mcp.json: mcpServers.unset.url or a header: ${MISSING} is not set and has no default; server skipped",
      '.mcp.json: mcpServers.odd.type "websocket" is not stdio, http or sse; server skipped',
    ]);
  });
});

describe.concurrent.each(carried(chaptersFrom("s14"), HTTP))(
  "$id MCP over HTTP through the chapter",
  (chapter) => {
    let server: Awaited<ReturnType<typeof legacyServer>>;
    beforeAll(async () => {
      server = await legacyServer({ sse: true });
    });
    afterAll(() => server.close());

    it("says a server that wants a sign-in needs a terminal, and writes no token", async () => {
      const guarded = await protectedServer();
      try {
        const run = await runChapter(chapter, {
          prompts: ["connect"],
          files: {
            ".mcp.json": JSON.stringify({
              mcpServers: { vault: { type: "http", url: guarded.url } },
            }),
          },
          steps: [
            { when: userSaid("connect"), reply: reply(toolUse("connect_mcp", { name: "vault" })) },
            { when: (r) => lastToolResults(r).length > 0, reply: reply(text("NO SIGN-IN")) },
          ],
        });
        expect(String(lastToolResults(run.requests[1]!)[0]?.content)).toMatch(
          /authorization for http:\/\/127\.0\.0\.1:\d+\/mcp failed: signing in needs a terminal/,
        );
        expect(guarded.seen.some((s) => s.path === "/authorize")).toBe(false);
      } finally {
        await guarded.close();
      }
    });

    it("declines a server's question in a session with no terminal, and the call still ends", async () => {
      const asking = await legacyServer({ sse: true, askOnCall: true });
      try {
        const run = await runChapter(chapter, {
          prompts: ["connect"],
          files: {
            ".mcp.json": JSON.stringify({
              mcpServers: { asker: { type: "http", url: asking.url } },
            }),
            ".claude/settings.json": JSON.stringify({ permissions: { allow: ["mcp__asker__*"] } }),
          },
          steps: [
            { when: userSaid("connect"), reply: reply(toolUse("connect_mcp", { name: "asker" })) },
            {
              when: (r) => String(lastToolResults(r)[0]?.content).startsWith("Connected"),
              reply: reply(toolUse("mcp__asker__echo", { text: "x" })),
            },
            { when: (r) => lastToolResults(r).length > 0, reply: reply(text("ASKED")) },
          ],
        });
        expect(run.output).toContain("[mcp] asker asks: Who are you?");
        expect(run.output).toContain("[mcp] declined: nobody can answer (no terminal)");
        expect(asking.answers.get("form")).toMatchObject({ result: { action: "decline" } });
        expect(run.output).toContain("ASKED");
      } finally {
        await asking.close();
      }
    });

    it("connects a type http server from .mcp.json and calls its tool; the header's token reaches no request and no log", async () => {
      const run = await runChapter(chapter, {
        prompts: ["connect", "/mcp"],
        env: { REMOTE_TOKEN: "secret-token" },
        files: {
          ".mcp.json": JSON.stringify({
            mcpServers: {
              remote: {
                type: "http",
                url: server.url,
                headers: { authorization: "Bearer ${REMOTE_TOKEN}" },
              },
            },
          }),
          ".claude/settings.json": JSON.stringify({ permissions: { allow: ["mcp__remote__*"] } }),
        },
        steps: [
          { when: userSaid("connect"), reply: reply(toolUse("connect_mcp", { name: "remote" })) },
          {
            when: (r) => String(lastToolResults(r)[0]?.content).startsWith("Connected"),
            reply: reply(toolUse("mcp__remote__echo", { text: "over http" })),
          },
          {
            when: (r) => String(lastToolResults(r)[0]?.content) === "echo: over http",
            reply: reply(text("HTTP DONE")),
          },
        ],
      });
      expect(run.output).toContain("HTTP DONE");
      expect(run.output).toContain(
        "remote: connected (http, legacy 2025-11-25, no token): mcp__remote__echo",
      );
      expect(JSON.stringify(run.requests)).not.toContain("secret-token");
      const logs = path.join(run.workdir, ".harness", "logs");
      for (const file of readdirSync(logs)) {
        expect(readFileSync(path.join(logs, file), "utf8"), file).not.toContain("secret-token");
      }
      expect(server.seen.some((s) => s.headers.authorization === "Bearer secret-token")).toBe(true);
    });
  },
);
