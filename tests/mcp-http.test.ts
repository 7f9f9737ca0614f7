/**
 * MCP over Streamable HTTP, against every chapter from s14: the client against a server
 * written here (JSON and SSE answers, sessions and their headers, a dropped stream resumed
 * with Last-Event-ID, junk events, a session the server forgets, HTTP errors, a server too
 * slow to answer), interop with the official TypeScript SDK's HTTP handler, `.mcp.json`'s
 * http entries, and through the chapter a remote server's tool called with a header whose
 * token never reaches the model or the logs.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { reply, text, toolUse } from "shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type * as McpModule from "../chapters/s14-mcp/src/mcp.ts";
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

const HTTP = moduleVersions("s14", ["mcp-client.ts", "mcp-http.ts", "mcp-config.ts", "mcp-cli.ts"]);

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
      expect(await cli.main([server.url], { MCP_CONFORMANCE_SCENARIO: "auth/none" })).toBe(2);
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
  "$id a server's question at the terminal",
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
        "remote: connected (http, legacy 2025-11-25): mcp__remote__echo",
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
