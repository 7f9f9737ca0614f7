/**
 * s03's offline demo: the same clean-up request meets each gate in turn — the deny list,
 * an approval that cannot be given (the demo's stdin is not a terminal, so the pipeline
 * fails closed, exactly as it does in a terminal-less run), an allow rule from the sample
 * `.claude/settings.json`, and a deny rule. Run: pnpm --filter s03 demo
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

/** The tool_result texts in the request's last message, in order. */
function lastResults(request: Anthropic.MessageCreateParams): string[] {
  const last = request.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content.flatMap((block) =>
    block.type === "tool_result" && typeof block.content === "string" ? [block.content] : [],
  );
}

const resultSays = (needle: string) => (request: Anthropic.MessageCreateParams) =>
  lastResults(request).some((result) => result.includes(needle));

const userSaid = (needle: string) => (request: Anthropic.MessageCreateParams) => {
  const last = request.messages.at(-1);
  return last?.role === "user" && typeof last.content === "string" && last.content.includes(needle);
};

export const SAMPLE_SETTINGS = {
  permissions: {
    allow: ["Bash(rm -rf build/cache:*)"],
    deny: ["Read(.env)"],
  },
};

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s03",
  shows:
    "a deny-list hit, an approval refused because stdin is not a terminal (the demo always " +
    "runs without one), an allow rule and a deny rule from .claude/settings.json.",
  setup(workdir) {
    mkdirSync(path.join(workdir, "build", "cache"), { recursive: true });
    writeFileSync(path.join(workdir, "build", "cache", "old.o"), "stale\n");
    writeFileSync(path.join(workdir, "build", "app.js"), "console.log('app')\n");
    writeFileSync(path.join(workdir, ".env"), "API_TOKEN=do-not-share\n");
    mkdirSync(path.join(workdir, ".claude"));
    writeFileSync(
      path.join(workdir, ".claude", "settings.json"),
      `${JSON.stringify(SAMPLE_SETTINGS, null, 2)}\n`,
    );
  },
  prompts: ["Clean up the build folder.", "Show me what is in .env"],
  script: [
    {
      name: "try sudo first",
      when: userSaid("Clean up"),
      reply: reply(
        text("I'll remove the build folder."),
        toolUse("bash", { command: "sudo rm -rf build" }),
      ),
    },
    {
      name: "without sudo: needs approval",
      when: resultSays("deny list"),
      reply: reply(text("Without sudo, then."), toolUse("bash", { command: "rm -rf build" })),
    },
    {
      name: "only the cache: an allow rule covers it",
      when: resultSays("stdin is not a terminal"),
      reply: reply(
        text(
          "I may not delete the whole folder without approval; the project allows clearing the cache.",
        ),
        toolUse("bash", { command: "rm -rf build/cache" }),
        toolUse("bash", { command: "ls build" }),
      ),
    },
    {
      name: "summary",
      when: (request) => lastResults(request).some((result) => result.includes("app.js")),
      reply: reply(
        text(
          "Cleared build/cache (allowed by the project's rule). Removing all of build/ needs your " +
            "approval, which nobody could give without a terminal; build/app.js is still there.",
        ),
      ),
    },
    {
      name: "read .env: a deny rule",
      when: userSaid(".env"),
      reply: reply(toolUse("read_file", { path: ".env" })),
    },
    {
      name: "accept the deny rule",
      when: resultSays("deny rule"),
      reply: reply(text("The project's settings deny reading .env, so I can't show it.")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
