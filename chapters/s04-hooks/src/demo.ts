/**
 * s04's offline demo: three command hooks from the sample `.claude/settings.json` fire
 * around the real loop — one logs every bash command to a file, one blocks edits to
 * `.env` (exit code 2), and a Stop hook asks for one more round before the agent
 * finishes. The in-code sample hooks print their `[hook]` lines too.
 * Run: pnpm --filter s04 demo
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

/** Appends each bash command the agent runs to bash-commands.log. */
export const LOG_BASH_HOOK = `// PreToolUse hook: reads the call as JSON on stdin, logs bash commands.
import { appendFileSync, readFileSync } from "node:fs";
const call = JSON.parse(readFileSync(0, "utf8"));
appendFileSync("bash-commands.log", \`\${call.tool_input.command}\\n\`);
`;

/** Exit code 2 blocks the call; stderr becomes the reason the model reads. */
export const PROTECT_ENV_HOOK = `// PreToolUse hook: refuses edits to .env files.
import { readFileSync } from "node:fs";
const call = JSON.parse(readFileSync(0, "utf8"));
const file = call.tool_input.file_path ?? "";
if (/(^|\\/)\\.env$/.test(file)) {
  process.stderr.write(".env holds secrets; ask the user to change it by hand.");
  process.exit(2);
}
`;

/** Stop hook: the first time, ask for a summary of touched files; then let it stop. */
export const FILES_TOUCHED_HOOK = `// Stop hook: one extra round, once per run of this demo.
import { existsSync, writeFileSync } from "node:fs";
if (!existsSync(".stop-hook-fired")) {
  writeFileSync(".stop-hook-fired", "");
  console.log(JSON.stringify({ decision: "block", reason: "Before you finish, list the files you touched." }));
}
`;

const hook = (file: string) => ({
  type: "command",
  command: `node .claude/hooks/${file}`,
  timeout: 10,
});

export const SAMPLE_SETTINGS = {
  hooks: {
    PreToolUse: [
      { matcher: "Bash", hooks: [hook("log-bash.mjs")] },
      { matcher: "Edit|Write", hooks: [hook("protect-env.mjs")] },
    ],
    Stop: [{ hooks: [hook("files-touched.mjs")] }],
  },
};

/** The tool_result texts in the request's last message, in order. */
function lastResults(request: Anthropic.MessageCreateParams): string[] {
  const last = request.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content.flatMap((block) =>
    block.type === "tool_result" && typeof block.content === "string" ? [block.content] : [],
  );
}

const lastUserText = (request: Anthropic.MessageCreateParams) => {
  const last = request.messages.at(-1);
  return last?.role === "user" && typeof last.content === "string" ? last.content : "";
};

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s04",
  shows:
    "command hooks from .claude/settings.json log a bash call, block an edit to .env, and keep the agent going once at Stop.",
  setup(workdir) {
    mkdirSync(path.join(workdir, ".claude", "hooks"), { recursive: true });
    writeFileSync(path.join(workdir, ".claude", "hooks", "log-bash.mjs"), LOG_BASH_HOOK);
    writeFileSync(path.join(workdir, ".claude", "hooks", "protect-env.mjs"), PROTECT_ENV_HOOK);
    writeFileSync(path.join(workdir, ".claude", "hooks", "files-touched.mjs"), FILES_TOUCHED_HOOK);
    writeFileSync(
      path.join(workdir, ".claude", "settings.json"),
      `${JSON.stringify(SAMPLE_SETTINGS, null, 2)}\n`,
    );
    writeFileSync(path.join(workdir, "notes.txt"), "# notes\n");
    writeFileSync(path.join(workdir, ".env"), "DEBUG=0\n");
  },
  prompts: ["Add a line to notes.txt, then turn on DEBUG in .env"],
  script: [
    {
      name: "bash: the log hook records it",
      when: (request) => lastUserText(request).startsWith("Add a line"),
      reply: reply(
        text("Appending to notes.txt, then editing .env."),
        toolUse("bash", { command: "echo 'hooks run around every call' >> notes.txt" }),
        toolUse("edit_file", { path: ".env", old_text: "DEBUG=0", new_text: "DEBUG=1" }),
      ),
    },
    {
      name: "accept the block",
      when: (request) => lastResults(request).some((r) => r.includes("Blocked by PreToolUse hook")),
      reply: reply(
        text(
          "I added the line. A project hook blocked the .env edit: please set DEBUG=1 yourself.",
        ),
      ),
    },
    {
      name: "the Stop hook asked for one more round",
      when: (request) => lastUserText(request).includes("list the files you touched"),
      reply: reply(toolUse("bash", { command: "cat bash-commands.log" })),
    },
    {
      name: "the summary",
      when: (request) => lastResults(request).some((r) => r.includes("notes.txt")),
      reply: reply(
        text("Touched: notes.txt (one line added). The log hook wrote bash-commands.log."),
      ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
