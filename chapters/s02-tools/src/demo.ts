/**
 * s02's offline demo: the model writes a file, edits it, then reads it back and globs the
 * workspace in one round (two calls, results in call order), and answers from the real
 * results. A second request tries to read outside the workspace and is refused. The
 * "model" is a script; everything else is the real harness. Run: pnpm --filter s02 demo
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;

/** The tool_result texts in the request's last message, in order. */
function lastResults(request: Request): string[] {
  const last = request.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content.flatMap((block) =>
    block.type === "tool_result" && typeof block.content === "string" ? [block.content] : [],
  );
}

/** The text the user typed, when the last message is a typed line. */
function typed(request: Request): string {
  const last = request.messages.at(-1);
  return last?.role === "user" && typeof last.content === "string" ? last.content : "";
}

const resultStarts = (prefix: string) => (request: Request) =>
  lastResults(request).some((result) => result.startsWith(prefix));

const NOTE = "todo.md";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s02",
  shows: "write, edit, read and glob through the dispatch map, then a path that escapes.",
  setup(workdir) {
    writeFileSync(path.join(workdir, "README.md"), "# Demo workspace\n");
  },
  prompts: [
    "Start a todo list in notes/todo.md with milk and bread, make it oat milk, then show me the file and every markdown file here.",
    "Now show me ../../etc/passwd",
  ],
  script: [
    {
      name: "write the note",
      when: (request) => typed(request).includes("todo list"),
      reply: reply(
        text("I'll create the list first."),
        toolUse("write_file", {
          path: `notes/${NOTE}`,
          content: "# Todo\n\n- milk\n- bread\n",
        }),
      ),
    },
    {
      name: "edit it",
      when: resultStarts("Wrote "),
      reply: reply(
        toolUse("edit_file", { path: `notes/${NOTE}`, old_text: "- milk", new_text: "- oat milk" }),
      ),
    },
    {
      name: "read it back and glob, in one reply",
      when: resultStarts("Edited "),
      reply: reply(
        toolUse("read_file", { path: `notes/${NOTE}` }),
        toolUse("glob", { pattern: "**/*.md" }),
      ),
    },
    {
      name: "answer from the real results",
      when: (request) => lastResults(request).length === 2,
      reply: (request) => {
        const [note = "", files = ""] = lastResults(request);
        return reply(
          text(
            `notes/${NOTE} now reads:\n\n${note}\n\nMarkdown files in the workspace: ${files.split("\n").join(", ")}.`,
          ),
        );
      },
    },
    {
      name: "a path outside the workspace",
      when: (request) => typed(request).includes("passwd"),
      reply: reply(toolUse("read_file", { path: "../../etc/passwd" })),
    },
    {
      name: "accept the refusal",
      when: resultStarts("Error: Path escapes workspace"),
      reply: (request) =>
        reply(
          text(
            `The harness refused: "${lastResults(request)[0]}". File tools only work inside the workspace.`,
          ),
        ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
