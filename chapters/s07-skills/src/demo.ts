/**
 * s07's offline demo: the course's sample skills are copied into the demo workspace; the
 * model sees only their one-line catalog, loads `code-review` when asked for a review, and
 * follows it. Run: pnpm --filter s07 demo
 */
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Anthropic from "@anthropic-ai/sdk";
import { findRepoRoot, runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

const last = (request: Anthropic.MessageCreateParams) => JSON.stringify(request.messages.at(-1));

const CALC = `export function average(values) {\n  let total = 0;\n  for (const v of values) total += v;\n  return total / values.length;\n}\n`;

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s07",
  shows:
    "the model sees a one-line catalog of skills and loads the full code-review skill when it applies.",
  setup(workdir) {
    const root = findRepoRoot(path.dirname(fileURLToPath(import.meta.url)));
    if (root) cpSync(path.join(root, "skills"), path.join(workdir, "skills"), { recursive: true });
    mkdirSync(path.join(workdir, "src"));
    writeFileSync(path.join(workdir, "src", "stats.js"), CALC);
  },
  prompts: ["/skills", "Please review src/stats.js."],
  script: [
    {
      name: "a review was asked for: load the skill",
      when: (request) => last(request).includes("review src/stats.js"),
      reply: reply(
        text("There is a code-review skill in the catalog; loading it first."),
        toolUse("load_skill", { name: "code-review" }),
      ),
    },
    {
      name: "follow it: read the code",
      when: (request) => last(request).includes("name: code-review"),
      reply: reply(toolUse("read_file", { path: "src/stats.js" })),
    },
    {
      name: "report as the skill says",
      when: (request) => last(request).includes("function average"),
      reply: reply(
        text(
          "src/stats.js:4 (bug): average([]) divides by zero and returns NaN. Fix: return 0 " +
            "(or throw) when values is empty.\nNo other findings; the loop is fine.",
        ),
      ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
