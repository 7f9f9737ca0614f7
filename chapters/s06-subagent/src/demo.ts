/**
 * s06's offline demo: the parent delegates one exploration to a subagent. The child's
 * calls show up with `[sub]`, and the parent's next request carries only the child's final
 * answer, not the files it read. Run: pnpm --filter s06 demo
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;

/** Child requests are the ones without the `task` tool. */
const isChild = (request: Request) =>
  !(request.tools ?? []).some((tool) => "name" in tool && tool.name === "task");
const last = (request: Request) => JSON.stringify(request.messages.at(-1));

const CHILD_PROMPT =
  "Find which test framework the project in the current folder uses. Read package.json and " +
  "look for test files. Answer in one or two sentences: the framework and the evidence.";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s06",
  shows: "a subagent explores with a fresh context; only its final answer reaches the parent.",
  setup(workdir) {
    mkdirSync(path.join(workdir, "src"));
    writeFileSync(
      path.join(workdir, "package.json"),
      `${JSON.stringify({ name: "calc", type: "module", devDependencies: { vitest: "^4.1.0" } }, null, 2)}\n`,
    );
    writeFileSync(path.join(workdir, "src", "sum.js"), "export const sum = (a, b) => a + b;\n");
    writeFileSync(
      path.join(workdir, "src", "sum.test.js"),
      'import { expect, it } from "vitest";\nimport { sum } from "./sum.js";\n\nit("adds", () => expect(sum(2, 3)).toBe(5));\n',
    );
  },
  prompts: ["Which test framework does this project use? Let a subagent find out."],
  script: [
    {
      name: "parent delegates",
      when: (request) => !isChild(request) && last(request).includes("test framework"),
      reply: reply(text("I'll delegate the search."), toolUse("task", { prompt: CHILD_PROMPT })),
    },
    {
      name: "child explores",
      when: (request) => isChild(request) && request.messages.length === 1,
      reply: reply(
        toolUse("read_file", { path: "package.json" }),
        toolUse("glob", { pattern: "**/*.test.*" }),
      ),
    },
    {
      name: "child answers",
      when: (request) => isChild(request) && last(request).includes("sum.test.js"),
      reply: reply(
        text(
          "The project uses vitest: package.json lists it in devDependencies, and " +
            "src/sum.test.js imports `it` and `expect` from it.",
        ),
      ),
    },
    {
      name: "parent answers from the summary alone",
      when: (request) => !isChild(request) && last(request).includes("uses vitest"),
      reply: reply(
        text("It uses vitest (a subagent read package.json and found src/sum.test.js)."),
      ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
