/**
 * s14: MCP Plugin — tools from MCP servers, next to the built-in ones.
 *
 *   <WORKDIR>/.mcp.json names stdio servers and remote ("type": "http") ones; connect_mcp
 *        {name} starts or reaches one (signing in with OAuth when it answers 401), finds its era
 *        (modern 2026-07-28: server/discover; legacy: the initialize handshake) and lists
 *        its tools
 *   before every model call the pool is built again: the built-ins, then each connected
 *        server's tools as mcp__<server>__<tool>
 *   every MCP call asks first (settings rules mcp__docs, mcp__docs__search, mcp__docs__*
 *        allow, deny or ask); a server that exits takes its tools with it
 *
 *   plugins (plugins.ts): --plugin-dir <path>, or enabledPlugins in the settings; their
 *        commands, agents, skills, hooks and servers join the project's own
 *
 * Run it:  pnpm --filter s14 start    (no key configured: the offline demo runs)
 *          pnpm --filter s14 start -- --plugin-dir ../my-kit
 *          pnpm --filter s14 demo
 * New here: mcp-config.ts (.mcp.json and ${VAR}), mcp.ts (names, results, connect_mcp,
 * /mcp, the pool, a server's questions, the sign-in), mcp-client.ts (the JSON-RPC client,
 * both eras), mcp-http.ts (Streamable HTTP), mcp-auth.ts (OAuth), mcp-cli.ts (the client
 * alone, for the conformance suite), servers/course-mcp.mjs (the course's server),
 * plugins.ts (plugins), two lines in the list below.
 */
import { type MainIO, runIfEntry } from "shared";
import { backgroundMechanism } from "./background.ts";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { compactMechanism } from "./compact.ts";
import { cronMechanism } from "./cron.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { mcpMechanism } from "./mcp.ts";
import { memoryMechanism } from "./memory.ts";
import { permissionsMechanism } from "./permissions.ts";
import { pluginsMechanism } from "./plugins.ts";
import { skillsMechanism } from "./skills.ts";
import { subagentMechanism } from "./subagent.ts";
import { tasksMechanism } from "./tasks.ts";
import { teamsMechanism } from "./teams.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s14", title: "MCP Plugin" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
    hooksMechanism(harness),
    todoMechanism(harness),
    subagentMechanism(harness),
    skillsMechanism(harness),
    commandsMechanism(harness),
    compactMechanism(harness),
    memoryMechanism(harness),
    tasksMechanism(harness),
    backgroundMechanism(harness),
    cronMechanism(harness),
    teamsMechanism(harness),
    mcpMechanism(harness),
    pluginsMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
