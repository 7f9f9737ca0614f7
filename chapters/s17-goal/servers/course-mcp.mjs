#!/usr/bin/env node
/**
 * The course's own MCP server (s14): plain Node, no dependencies, newline-delimited JSON-RPC
 * 2.0 on stdin/stdout, logs on stderr.
 *
 *   node servers/course-mcp.mjs docs            modern (2026-07-28): server/discover, _meta
 *   node servers/course-mcp.mjs deploy --legacy legacy (2025-11-25): initialize first
 *
 * `docs` serves search and get_version, `deploy` serves trigger and status. The flags after
 * the server name exist so the tests can make it misbehave the ways real servers do:
 * --page N (tools/list pages of N), --junk (a non-JSON line on stdout before each reply),
 * --crash-on TOOL (exit while that call runs), --hang-on TOOL (never answer that call),
 * --mute (never answer anything), --ignore-discover (legacy: no answer to the probe),
 * --record FILE (append every line received), --pidfile FILE (write this process's pid),
 * --only VERSION (speak only that modern revision).
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const option0 = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? null : process.argv[at + 1];
};
// --only VERSION: a modern server of another revision (the client must refuse it clearly).
const MODERN = option0("--only") ?? "2026-07-28";
const LEGACY = "2025-11-25";
const META = {
  version: "io.modelcontextprotocol/protocolVersion",
  capabilities: "io.modelcontextprotocol/clientCapabilities",
  serverInfo: "io.modelcontextprotocol/serverInfo",
};

const args = process.argv.slice(2);
const kind = args[0];
const flag = (name) => args.includes(name);
const option = (name) => {
  const at = args.indexOf(name);
  return at === -1 ? null : args[at + 1];
};
const legacy = flag("--legacy");
const pageSize = Number(option("--page") ?? 100);
const info = { name: `course-${kind}`, version: "1.0.0" };
const log = (text) => process.stderr.write(`course-mcp ${kind}: ${text}\n`);

/** What each tool does with its arguments: a text, or a TypeError for a bad argument. */
const TOOLS = {
  docs: [
    {
      name: "search",
      description: "Search the documentation.",
      inputSchema: {
        type: "object",
        properties: { query: { type: "string" } },
        required: ["query"],
      },
      annotations: { readOnlyHint: true },
      run: ({ query }) => `[docs] Found 3 results for '${query}'`,
      strings: ["query"],
    },
    {
      name: "get_version",
      description: "Get the documentation API version.",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      run: () => "[docs] API v2.1.0",
      strings: [],
    },
  ],
  deploy: [
    {
      name: "trigger",
      description: "Trigger a deployment.",
      inputSchema: {
        type: "object",
        properties: { service: { type: "string" } },
        required: ["service"],
      },
      annotations: { destructiveHint: true },
      run: ({ service }) => `[deploy] Triggered: ${service}`,
      strings: ["service"],
    },
    {
      name: "status",
      description: "Check deployment status.",
      inputSchema: {
        type: "object",
        properties: { service: { type: "string" } },
        required: ["service"],
      },
      annotations: { readOnlyHint: true },
      run: ({ service }) => `[deploy] ${service}: running (v1.4.2)`,
      strings: ["service"],
    },
  ],
};

if (!TOOLS[kind]) {
  log(`unknown server '${kind}'; use docs or deploy`);
  process.exit(2);
}

const send = (message) => {
  if (flag("--junk")) process.stdout.write("this line is not JSON-RPC\n");
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
};
const reply = (id, result) =>
  send({
    id,
    result: legacy
      ? result
      : { resultType: "complete", ...result, _meta: { [META.serverInfo]: info } },
  });
const fail = (id, code, message, data) =>
  send({ id, error: { code, message, ...(data ? { data } : {}) } });

/** A modern request must say which revision it speaks; this server speaks one. */
function versionProblem(id, params) {
  const requested = params?._meta?.[META.version];
  if (requested === undefined) {
    fail(id, -32602, `missing _meta["${META.version}"]`);
    return true;
  }
  if (requested !== MODERN) {
    fail(id, -32022, "Unsupported protocol version", { supported: [MODERN], requested });
    return true;
  }
  return false;
}

function callTool(id, params) {
  const tool = TOOLS[kind].find((t) => t.name === params?.name);
  if (!tool) return fail(id, -32602, `Unknown tool: ${params?.name}`);
  if (option("--crash-on") === tool.name) {
    log(`crashing during ${tool.name}, as asked`);
    process.exit(3);
  }
  if (option("--hang-on") === tool.name) return log(`not answering ${tool.name}, as asked`);
  const input = params.arguments ?? {};
  const known = Object.keys(tool.inputSchema.properties);
  const extra = Object.keys(input).find((key) => !known.includes(key));
  const wrong = tool.strings.find((key) => typeof input[key] !== "string");
  const problem = extra
    ? `unexpected argument '${extra}'`
    : wrong
      ? `argument '${wrong}' must be a string`
      : null;
  if (problem)
    return reply(id, { content: [{ type: "text", text: `TypeError: ${problem}` }], isError: true });
  reply(id, { content: [{ type: "text", text: tool.run(input) }] });
}

function listTools(id, params) {
  const start = Number(params?.cursor ?? 0);
  const page = TOOLS[kind].slice(start, start + pageSize);
  const next = start + pageSize < TOOLS[kind].length ? String(start + pageSize) : undefined;
  const tools = page.map(({ name, description, inputSchema, annotations }) => ({
    name,
    description,
    inputSchema,
    annotations,
  }));
  // The modern revision asks list results to say how long they may be cached.
  const cache = legacy ? {} : { ttlMs: 60_000, cacheScope: "public" };
  reply(id, { tools, ...(next ? { nextCursor: next } : {}), ...cache });
}

function handle(message) {
  const { id, method, params } = message;
  if (flag("--mute")) return;
  if (id === undefined) return; // notifications: nothing to answer
  if (method === "server/discover") {
    if (legacy) return flag("--ignore-discover") ? undefined : fail(id, -32601, "Method not found");
    if (versionProblem(id, params)) return;
    return reply(id, { supportedVersions: [MODERN], capabilities: { tools: {} } });
  }
  if (method === "initialize") {
    if (!legacy)
      return fail(id, -32601, `initialize is not supported: this server speaks ${MODERN} only`);
    reply(id, { protocolVersion: LEGACY, capabilities: { tools: {} }, serverInfo: info });
    // A legacy server may check that its client is alive.
    send({ id: "ping-1", method: "ping" });
    return;
  }
  if (!legacy && versionProblem(id, params)) return;
  if (method === "tools/list") return listTools(id, params);
  if (method === "tools/call") return callTool(id, params);
  fail(id, -32601, "Method not found");
}

log(`started (${legacy ? `legacy ${LEGACY}` : `modern ${MODERN}`})`);
if (option("--pidfile")) writeFileSync(option("--pidfile"), String(process.pid));
createInterface({ input: process.stdin }).on("line", (line) => {
  if (option("--record")) appendFileSync(option("--record"), `${line}\n`);
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return log(`ignored a line that is not JSON: ${line.slice(0, 80)}`);
  }
  if (message.method === undefined && message.id === "ping-1")
    return log("the client answered ping");
  handle(message);
});
