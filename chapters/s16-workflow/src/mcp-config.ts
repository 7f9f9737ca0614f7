/**
 * MCP's configuration (s14): `<WORKDIR>/.mcp.json`, read once when the harness starts.
 *
 *   {"mcpServers": {"docs": {"command": "node", "args": [...], "env": {}},
 *                   "remote": {"type": "http", "url": "https://…/mcp", "headers": {…}}}}
 *   ──> servers in file order, `${VAR}` and `${VAR:-default}` expanded in command, args,
 *       env, url and headers; every problem named (the file, the field), nothing guessed
 *
 * A file that is not JSON, or has no mcpServers object, loads no server; a server entry
 * that is wrong (the old SSE transport, a missing command or url, an unset variable) is
 * skipped. A plugin's servers (plugins.ts) are read the same way.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { asObject } from "shared";
import type { HttpServer, ServerConfig } from "./mcp-client.ts";
import type { Plugin } from "./plugins.ts";

export const CONFIG_FILE = ".mcp.json";

export interface McpConfig {
  servers: ServerConfig[];
  /** What is wrong with the file, each naming the file and the field. */
  problems: string[];
}

/** `${VAR}` and `${VAR:-default}`, as Claude Code expands them; an unset VAR is an error. */
export function expandVars(text: string, env: Record<string, string | undefined>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name, fallback) => {
    const value = env[name];
    if (value !== undefined && value !== "") return value;
    if (fallback !== undefined) return fallback;
    throw new Error(`\${${name}} is not set and has no default`);
  });
}

/** Reads `.mcp.json`: stdio servers in file order; every problem named, nothing guessed. */
export function loadMcpConfig(workdir: string, env: Record<string, string | undefined>): McpConfig {
  const file = path.join(workdir, CONFIG_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return { servers: [], problems: [] };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      servers: [],
      problems: [
        `${CONFIG_FILE}: invalid JSON (${(error as Error).message}); no MCP servers loaded`,
      ],
    };
  }
  const entries = asObject(asObject(value)?.mcpServers);
  if (!entries) {
    return {
      servers: [],
      problems: [`${CONFIG_FILE}: mcpServers must be an object of servers; no MCP servers loaded`],
    };
  }
  return readServers(entries, CONFIG_FILE, env);
}

/**
 * A plugin's servers (plugins.ts), named `plugin:<plugin>:<name>` as Claude Code names them,
 * with ${CLAUDE_PLUGIN_ROOT} expanded and set in a stdio server's environment.
 */
export function pluginServers(
  plugins: readonly Plugin[],
  env: Record<string, string | undefined>,
): McpConfig {
  const config: McpConfig = { servers: [], problems: [] };
  for (const plugin of plugins) {
    for (const part of plugin.mcpServers) {
      const entries = asObject(part.value.mcpServers)!;
      const read = readServers(entries, part.file, { ...env, CLAUDE_PLUGIN_ROOT: plugin.root });
      config.problems.push(...read.problems);
      for (const server of read.servers) {
        const name = `plugin:${plugin.name}:${server.name}`;
        config.servers.push(
          "command" in server
            ? { ...server, name, env: { CLAUDE_PLUGIN_ROOT: plugin.root, ...server.env } }
            : { ...server, name },
        );
      }
    }
  }
  return config;
}

/** Servers in file order from an `mcpServers` object; `file` names where it came from. */
function readServers(
  entries: Record<string, unknown>,
  file: string,
  env: Record<string, string | undefined>,
): McpConfig {
  const servers: ServerConfig[] = [];
  const problems: string[] = [];
  for (const [name, raw] of Object.entries(entries)) {
    const where = `${file}: mcpServers.${name}`;
    const entry = asObject(raw);
    if (!entry) {
      problems.push(`${where} must be an object`);
      continue;
    }
    const problem = (field: string, rule: string) =>
      problems.push(`${where}.${field} ${rule}; server skipped`);
    if (entry.type === "sse") {
      problems.push(
        `${where} uses the SSE transport, which MCP replaced with Streamable HTTP; if the server speaks it, write "type": "http"; server skipped`,
      );
      continue;
    }
    if (entry.type === "http" || (entry.type === undefined && entry.url !== undefined)) {
      if (entry.type === undefined) {
        problem("type", 'is missing: a server with a url needs "type": "http"');
        continue;
      }
      const server = httpServer(name, entry, env);
      if ("rule" in server) problem(server.field, server.rule);
      else servers.push(server);
      continue;
    }
    if (entry.type !== undefined && entry.type !== "stdio") {
      problem("type", `${JSON.stringify(entry.type)} is not stdio, http or sse`);
      continue;
    }
    if (typeof entry.command !== "string" || !entry.command.trim()) {
      problem("command", "must be a non-empty string");
      continue;
    }
    const args = entry.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) {
      problem("args", "must be a list of strings");
      continue;
    }
    const envEntry = asObject(entry.env ?? {});
    if (!envEntry || !Object.values(envEntry).every((v) => typeof v === "string")) {
      problem("env", "must be an object of strings");
      continue;
    }
    try {
      servers.push({
        name,
        command: expandVars(entry.command, env),
        args: (args as string[]).map((arg) => expandVars(arg, env)),
        env: Object.fromEntries(
          Object.entries(envEntry as Record<string, string>).map(([k, v]) => [
            k,
            expandVars(v, env),
          ]),
        ),
      });
    } catch (error) {
      problems.push(`${where}: ${(error as Error).message}; server skipped`);
    }
  }
  return { servers, problems };
}

/** An http entry as a server, or the field it gets wrong and how. */
function httpServer(
  name: string,
  entry: Record<string, unknown>,
  env: Record<string, string | undefined>,
): HttpServer | { field: string; rule: string } {
  if (typeof entry.url !== "string" || !entry.url.trim())
    return { field: "url", rule: "must be a non-empty string" };
  const headers = asObject(entry.headers ?? {});
  if (!headers || !Object.values(headers).every((v) => typeof v === "string")) {
    return { field: "headers", rule: "must be an object of strings" };
  }
  let url: string;
  let expanded: Record<string, string>;
  try {
    url = expandVars(entry.url, env);
    expanded = Object.fromEntries(
      Object.entries(headers as Record<string, string>).map(([k, v]) => [k, expandVars(v, env)]),
    );
  } catch (error) {
    return { field: "url", rule: `or a header: ${(error as Error).message}` };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { field: "url", rule: `is not a URL (${url})` };
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return { field: "url", rule: `must be http:// or https:// (${parsed.protocol})` };
  }
  // A client registered with the server's authorization server beforehand, as Claude Code's
  // `oauth.clientId` (the secret from the environment, never written in the file itself).
  const oauth = entry.oauth === undefined ? {} : asObject(entry.oauth);
  if (!oauth || (oauth.clientId !== undefined && typeof oauth.clientId !== "string")) {
    return { field: "oauth", rule: "must be an object with a clientId string" };
  }
  let client: HttpServer["client"];
  if (typeof oauth.clientId === "string") {
    try {
      const secret =
        typeof oauth.clientSecret === "string" ? expandVars(oauth.clientSecret, env) : undefined;
      client = { id: expandVars(oauth.clientId, env), ...(secret ? { secret } : {}) };
    } catch (error) {
      return { field: "oauth", rule: (error as Error).message };
    }
  }
  return { name, type: "http", url, headers: expanded, ...(client ? { client } : {}) };
}
