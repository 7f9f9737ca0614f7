/**
 * s14.2: servers the project's settings turn off. Run it with
 * `pnpm course exercise check s14.2`.
 */
import path from "node:path";
import {
  afterTools,
  exerciseDir,
  expect,
  it,
  lastToolResults,
  reply,
  runExercise,
  text,
  toolUse,
} from "../../tests/helpers/exercise.ts";

/** `.mcp.json` with the chapter's own server twice, and settings that may turn some off. */
function files(
  settings: Record<string, unknown> | null,
  local: Record<string, unknown> | null = null,
) {
  const server = path.join(exerciseDir(), "servers", "course-mcp.mjs");
  return {
    ".mcp.json": JSON.stringify({
      mcpServers: {
        docs: { command: "node", args: [server, "docs"] },
        deploy: { command: "node", args: [server, "deploy", "--legacy"] },
      },
    }),
    ...(settings ? { ".claude/settings.json": JSON.stringify(settings) } : {}),
    ...(local ? { ".claude/settings.local.json": JSON.stringify(local) } : {}),
  };
}

/** connect_mcp for `name`; what the model got back, and the first request's connect_mcp. */
async function connect(name: string, workspace: Record<string, string>) {
  const run = await runExercise({
    files: workspace,
    prompts: ["connect"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("connect_mcp", { name })) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  const tool = (run.requests[0]!.tools as Array<{ name: string; description?: string }>).find(
    (t) => t.name === "connect_mcp",
  )!;
  return {
    content: String(result.content),
    isError: result.is_error === true,
    description: tool.description ?? "",
    run,
  };
}

it("does not offer a server the settings disable: connect_mcp names only the others", async () => {
  const { description } = await connect("docs", files({ disabledMcpjsonServers: ["deploy"] }));
  expect(description).toMatch(/Configured: docs\.$/);
});

it("refuses to connect a disabled server, naming the setting and its file", async () => {
  const result = await connect("deploy", files({ disabledMcpjsonServers: ["deploy"] }));
  expect({ content: result.content, isError: result.isError }).toEqual({
    content:
      "Error: MCP server 'deploy' is disabled by disabledMcpjsonServers in .claude/settings.json",
    isError: true,
  });
  expect(result.run.output).not.toContain("[mcp] connected deploy");
});

it("still connects the servers it does not name", async () => {
  const result = await connect("docs", files({ disabledMcpjsonServers: ["deploy"] }));
  expect(result.isError).toBe(false);
  expect(result.content).toMatch(/^Connected to MCP server 'docs'/);
});

it("reads the setting from .claude/settings.local.json too", async () => {
  const result = await connect("docs", files(null, { disabledMcpjsonServers: ["docs"] }));
  expect(result.content).toBe(
    "Error: MCP server 'docs' is disabled by disabledMcpjsonServers in .claude/settings.local.json",
  );
});
