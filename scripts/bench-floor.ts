/**
 * The floor for `pnpm bench`'s round table: the least a tool round can cost in this stack.
 * A bare loop shaped like the TypeScript port the course was checked against: the SDK's
 * `messages.create`, every tool call run with `spawnSync("/bin/sh", ["-c", command])`, its
 * output appended as the tool result and one line printed. No log, no streaming, no
 * mechanism. Run as `node --import tsx/esm scripts/bench-floor.ts <workdir>` with ANTHROPIC_BASE_URL
 * pointing at the fake API and the prompt on stdin; it ends at the first answer without a
 * tool call.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import Anthropic from "@anthropic-ai/sdk";

/** Where the commands run: the first argument. */
const workdir = process.argv[2] ?? process.cwd();
const client = new Anthropic({
  apiKey: process.env.ANTHROPIC_API_KEY,
  authToken: null,
  baseURL: process.env.ANTHROPIC_BASE_URL,
});
const bash: Anthropic.Tool = {
  name: "bash",
  description: "Run a shell command in the workspace and return its output.",
  input_schema: {
    type: "object",
    properties: { command: { type: "string", description: "The shell command to run." } },
    required: ["command"],
  },
};
const messages: Anthropic.MessageParam[] = [
  { role: "user", content: readFileSync(0, "utf8").trim() || "go" },
];

for (;;) {
  const response = await client.messages.create({
    model: process.env.MODEL_ID ?? "claude-sonnet-4-6",
    max_tokens: 8000,
    system: "You are a coding agent. Run commands rather than guessing.",
    messages,
    tools: [bash],
  });
  messages.push({ role: "assistant", content: response.content });
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) break;
  const results: Anthropic.ToolResultBlockParam[] = calls.map((call) => {
    const { command } = call.input as { command: string };
    const run = spawnSync("/bin/sh", ["-c", command], {
      cwd: workdir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    console.log(`> bash(${JSON.stringify(call.input)})`);
    return {
      type: "tool_result",
      tool_use_id: call.id,
      content: `${run.stdout}${run.stderr}`.trim() || "(no output)",
    };
  });
  messages.push({ role: "user", content: results });
}
