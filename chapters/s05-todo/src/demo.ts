/**
 * s05's offline demo: the model plans three steps with todo_write, moves them through
 * in_progress to completed, and after three tool rounds without an update the harness
 * attaches the reminder to the results. Run: pnpm --filter s05 demo
 */
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

const GREET = `export function greet(name) {\n  return \`Hello, \${name}!\`;\n}\n`;
const TEST = `import { greet } from "./greet.mjs";\nif (greet("Ada") !== "Hello, Ada!") throw new Error("greet is wrong");\nconsole.log("ok: greet works");\n`;

/** The text of the request's last message, tool results and reminders included. */
const last = (request: Anthropic.MessageCreateParams) => JSON.stringify(request.messages.at(-1));
const plan = (statuses: string[]) => ({
  todos: ["Write greet.mjs", "Write a test for it", "Run the test"].map((content, i) => ({
    content,
    status: statuses[i],
  })),
});

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s05",
  shows:
    "a three-step plan kept up to date with todo_write, and the reminder after three silent rounds.",
  prompts: ["Write a greet module with a test, and run the test."],
  script: [
    {
      name: "plan first",
      when: (request) => last(request).includes("greet module"),
      reply: reply(
        text("Planning first."),
        toolUse("todo_write", plan(["in_progress", "pending", "pending"])),
      ),
    },
    {
      name: "step 1",
      when: (request) => last(request).includes("(0/3 completed)"),
      reply: reply(toolUse("write_file", { path: "greet.mjs", content: GREET })),
    },
    {
      name: "update the plan",
      when: (request) => last(request).includes("to greet.mjs"),
      reply: reply(toolUse("todo_write", plan(["completed", "in_progress", "pending"]))),
    },
    {
      name: "step 2 (silent round 1)",
      when: (request) => last(request).includes("(1/3 completed)"),
      reply: reply(toolUse("write_file", { path: "greet.test.mjs", content: TEST })),
    },
    {
      name: "step 3 (silent round 2)",
      when: (request) => last(request).includes("to greet.test.mjs"),
      reply: reply(toolUse("bash", { command: "node greet.test.mjs" })),
    },
    {
      name: "look around (silent round 3: the reminder follows)",
      when: (request) => last(request).includes("ok: greet works"),
      reply: reply(toolUse("bash", { command: "ls" })),
    },
    {
      name: "the reminder works",
      when: (request) => last(request).includes("<reminder>"),
      reply: reply(
        text("Right, the plan is stale."),
        toolUse("todo_write", plan(["completed", "completed", "completed"])),
      ),
    },
    {
      name: "done",
      when: (request) => last(request).includes("(3/3 completed)"),
      reply: reply(text("greet.mjs and its test are written, and the test passes.")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
