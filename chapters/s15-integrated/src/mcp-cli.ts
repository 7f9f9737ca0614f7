/**
 * This chapter's MCP client on its own, against one server URL: the adapter the official
 * conformance suite (`@modelcontextprotocol/conformance`) runs as a client.
 *
 *   pnpm --filter s14 mcp-client <url>          connect, list the tools, close
 *   MCP_CONFORMANCE_SCENARIO=tools_call …       and what that scenario asks of a client
 *
 * The suite starts a server for a scenario, runs this with the server's URL as the last
 * argument and the scenario's name in MCP_CONFORMANCE_SCENARIO, and checks what the
 * server saw. Every line this prints goes to stderr; the exit status is 0 when the client
 * did what it was asked.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { runIfEntry } from "shared";
import { headlessCallback } from "./mcp-auth.ts";
import { elicitationDefaults, McpConnection } from "./mcp-client.ts";

/** What each scenario the adapter knows asks the client to do once it is connected. */
const SCENARIOS: Record<string, (connection: McpConnection) => Promise<unknown>> = {
  initialize: async () => undefined,
  tools_call: (c) => c.callTool("add_numbers", { a: 5, b: 3 }),
  "sse-retry": (c) => c.callTool(c.tools[0]?.name ?? "test_reconnection", {}),
  "elicitation-sep1034-client-defaults": (c) => c.callTool("test_client_elicitation_defaults", {}),
  // Signed in on the way; a call may then ask for more scope (step-up).
  auth: async (c) => (c.tools[0] ? c.callTool(c.tools[0].name, {}) : undefined),
};

/** The client metadata document this client publishes in the suite's world (its CIMD id). */
const CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json";

/** `{client_id, client_secret}` from the scenario's context, when it gives them. */
function preRegistered(context: string | undefined): { client?: { id: string; secret?: string } } {
  try {
    const given = JSON.parse(context ?? "{}") as { client_id?: unknown; client_secret?: unknown };
    if (typeof given.client_id !== "string") return {};
    const secret = typeof given.client_secret === "string" ? { secret: given.client_secret } : {};
    return { client: { id: given.client_id, ...secret } };
  } catch {
    return {};
  }
}

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const say = (text: string) => process.stderr.write(`${text}\n`);
  const url = argv.at(-1);
  if (!url || !/^https?:\/\//.test(url)) {
    say("usage: mcp-client <server url>   (MCP_CONFORMANCE_SCENARIO picks what to do)");
    return 2;
  }
  const scenario = env.MCP_CONFORMANCE_SCENARIO ?? "initialize";
  const run = SCENARIOS[scenario] ?? (scenario.startsWith("auth/") ? SCENARIOS.auth : undefined);
  if (!run) {
    say(
      `mcp-client: scenario '${scenario}' is not one this client runs (${Object.keys(SCENARIOS).join(", ")})`,
    );
    return 2;
  }
  // A token lives as long as this run: a file named after the pid alone outlived it, and a
  // later run that got the same pid sent the old token to a new server.
  const tokens = mkdtempSync(path.join(os.tmpdir(), "mcp-client-"));
  let connection: McpConnection;
  try {
    connection = await McpConnection.open(
      { name: "conformance", type: "http", url, headers: {} },
      {
        workdir: process.cwd(),
        env: {},
        logFile: path.join(os.tmpdir(), `mcp-client-${process.pid}.log`),
        // No one at a terminal: every question is answered with the form's defaults.
        elicit: async (request) => ({ action: "accept", content: elicitationDefaults(request) }),
        // No browser: the authorization URL is fetched and its redirect read. A scenario
        // may hand over a pre-registered client (MCP_CONFORMANCE_CONTEXT).
        auth: {
          tokenFile: path.join(tokens, "token.json"),
          callback: async () => headlessCallback(),
          clientMetadataUrl: CLIENT_METADATA_URL,
          ...preRegistered(env.MCP_CONFORMANCE_CONTEXT),
        },
      },
    );
  } catch (error) {
    say(`mcp-client: cannot connect to ${url}: ${(error as Error).message}`);
    rmSync(tokens, { recursive: true, force: true });
    return 1;
  }
  say(
    `connected (${connection.era?.kind} ${connection.era?.version}): ${connection.tools.map((t) => t.name).join(", ")}`,
  );
  try {
    const result = await run(connection);
    if (result !== undefined) say(`result: ${JSON.stringify(result)}`);
    return 0;
  } catch (error) {
    say(`mcp-client: ${scenario} failed: ${(error as Error).message}`);
    return 1;
  } finally {
    await connection.close();
    rmSync(tokens, { recursive: true, force: true });
  }
}

runIfEntry(import.meta.url, async (io) => main(io.argv, io.env as NodeJS.ProcessEnv));
