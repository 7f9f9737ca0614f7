/**
 * s14.1: reading an MCP resource. Run it with `pnpm course exercise check s14.1`.
 */
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

/** A small server with two resources and no tools (the 2025-11-25 handshake, on stdio). */
const SERVER = `
import { createInterface } from "node:readline";
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n");
const RESOURCES = {
  "note://today": [{ uri: "note://today", mimeType: "text/plain", text: "Buy milk.\\nCall Ana." }],
  "note://two": [
    { uri: "note://two", mimeType: "text/plain", text: "first part" },
    { uri: "note://two", mimeType: "text/plain", text: "second part" },
  ],
};
createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === "initialize") {
    send({ id, result: { protocolVersion: "2025-11-25", capabilities: { resources: {} }, serverInfo: { name: "notes", version: "1.0.0" } } });
  } else if (method === "tools/list") {
    send({ id, result: { tools: [] } });
  } else if (method === "resources/read") {
    const contents = RESOURCES[params.uri];
    if (contents) send({ id, result: { contents } });
    else send({ id, error: { code: -32002, message: "Resource not found: " + params.uri } });
  } else {
    send({ id, error: { code: -32601, message: "Method not found: " + method } });
  }
});
`;

const FILES = {
  "notes-server.mjs": SERVER,
  ".mcp.json": JSON.stringify({
    mcpServers: { notes: { command: "node", args: ["notes-server.mjs"] } },
  }),
};

/** `calls` in turn (each the next reply's one tool call), then a final answer. */
async function session(calls: Array<[string, Record<string, unknown>]>): Promise<RunOutcome> {
  // Steps are taken in order, each once: the first answers the typed line, the rest a result.
  return runExercise({
    files: FILES,
    prompts: ["read my notes"],
    steps: [
      ...calls.map(([name, input], i) => ({
        when: (r: Parameters<typeof afterTools>[0]) => (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
}

/** The result of the `n`th tool call of a session (0-based). */
function result(run: RunOutcome, n: number): { content: string; isError: boolean } {
  const block = lastToolResults(run.requests[n + 1]!)[0]!;
  return { content: String(block.content), isError: block.is_error === true };
}

it("offers the model read_mcp_resource, which takes a server and a uri", async () => {
  const run = await runExercise({
    prompts: ["hi"],
    steps: [{ when: () => true, reply: reply(text("hello")) }],
  });
  expect(toolNames(run.requests[0]!)).toContain("read_mcp_resource");
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "read_mcp_resource")!;
  expect(Object.keys(tool.input_schema.properties).sort()).toEqual(["server", "uri"]);
  expect([...(tool.input_schema.required ?? [])].sort()).toEqual(["server", "uri"]);
});

it("reads a resource of a connected server: its text is the result", async () => {
  const run = await session([
    ["connect_mcp", { name: "notes" }],
    ["read_mcp_resource", { server: "notes", uri: "note://today" }],
    ["read_mcp_resource", { server: "notes", uri: "note://two" }],
  ]);
  expect(result(run, 1)).toEqual({ content: "Buy milk.\nCall Ana.", isError: false });
  expect(result(run, 2)).toEqual({ content: "first part\nsecond part", isError: false });
});

it("refuses a server that is not connected, and does not start it", async () => {
  const run = await session([["read_mcp_resource", { server: "notes", uri: "note://today" }]]);
  expect(result(run, 0)).toEqual({
    content: "Error: MCP server 'notes' is not connected; call connect_mcp first",
    isError: true,
  });
  expect(run.output).not.toContain("[mcp] connected notes");
});

it("gives the server's error for a resource it does not have", async () => {
  const run = await session([
    ["connect_mcp", { name: "notes" }],
    ["read_mcp_resource", { server: "notes", uri: "note://nope" }],
  ]);
  expect(result(run, 1)).toEqual({
    content: "MCP error: -32002 Resource not found: note://nope",
    isError: true,
  });
});
