/**
 * s14's offline demo: two stdio servers from `.mcp.json`, both the course's own
 * (servers/course-mcp.mjs): `docs` speaks the modern revision, `deploy` the legacy handshake.
 * The settings allow every docs tool and deploy's status; nothing allows deploy's trigger,
 * so that call asks, and with nobody at a terminal it is denied.
 *
 *   connect_mcp docs ──> the next request offers mcp__docs__search, mcp__docs__get_version
 *   (the demo prints the tools and the prompt's last line as the model receives them)
 *   connect_mcp deploy (legacy) ──> status runs, trigger is denied ──> /mcp
 * Run: pnpm --filter s14 demo
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;
const SERVER = new URL("../servers/course-mcp.mjs", import.meta.url).pathname;
const blocksOf = (request: Request): Anthropic.ContentBlockParam[] => {
  const content = request.messages.at(-1)?.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
};
const said = (request: Request) =>
  blocksOf(request)
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("\n");
const results = (request: Request) =>
  blocksOf(request).map((block) => (block.type === "tool_result" ? String(block.content) : ""));
const names = (request: Request) => (request.tools as Anthropic.Tool[]).map((tool) => tool.name);

const ASK_DOCS = 'Connect the docs server, search "agent hooks", and tell me the docs API version.';
const ASK_DEPLOY = "Connect deploy, check the web service's status, then deploy web.";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s14",
  shows:
    "connect_mcp starts a modern and a legacy stdio server; their tools join from the next call; an MCP call no rule allows is denied.",
  prompts: [ASK_DOCS, ASK_DEPLOY, "/mcp"],
  setup(workdir) {
    const servers = {
      docs: { command: "node", args: [SERVER, "docs"] },
      deploy: { command: "node", args: [SERVER, "deploy", "--legacy"] },
    };
    writeFileSync(
      path.join(workdir, ".mcp.json"),
      `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`,
    );
    mkdirSync(path.join(workdir, ".claude"), { recursive: true });
    const allow = ["mcp__docs", "mcp__deploy__status"];
    writeFileSync(
      path.join(workdir, ".claude", "settings.json"),
      `${JSON.stringify({ permissions: { allow } }, null, 2)}\n`,
    );
  },
  script: [
    {
      name: "connect docs",
      when: (r) => said(r).includes(ASK_DOCS),
      reply: reply(
        text("Connecting the docs server first."),
        toolUse("connect_mcp", { name: "docs" }),
      ),
    },
    {
      name: "use its tools, offered from this call on",
      when: (r) => results(r)[0]?.startsWith("Connected to MCP server 'docs'") === true,
      sent: (r) => ({
        title:
          "the next request: the built-ins, then the server's tools; the prompt ends with the connected servers",
        text: [
          `tools (${names(r).length}): … ${names(r).slice(-4).join(", ")}`,
          `system prompt, last line: ${String(r.system).split("\n").at(-1)}`,
        ].join("\n"),
      }),
      reply: reply(
        toolUse("mcp__docs__search", { query: "agent hooks" }),
        toolUse("mcp__docs__get_version", {}),
      ),
    },
    {
      name: "answer from the server's results",
      when: (r) => results(r)[0]?.startsWith("[docs] Found") === true,
      reply: reply(text("The docs have 3 results for 'agent hooks', and the docs API is v2.1.0.")),
    },
    {
      name: "connect deploy",
      when: (r) => said(r).includes(ASK_DEPLOY),
      reply: reply(toolUse("connect_mcp", { name: "deploy" })),
    },
    {
      name: "status, then the deployment",
      when: (r) => results(r)[0]?.startsWith("Connected to MCP server 'deploy'") === true,
      reply: reply(
        toolUse("mcp__deploy__status", { service: "web" }),
        toolUse("mcp__deploy__trigger", { service: "web" }),
      ),
    },
    {
      name: "report the denial",
      when: (r) => results(r)[0]?.startsWith("[deploy] web") === true,
      reply: reply(
        text(
          "web is running v1.4.2. I did not deploy: the trigger needs your approval, and no rule in .claude/settings.json allows it.",
        ),
      ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
