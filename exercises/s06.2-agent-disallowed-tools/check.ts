/**
 * s06.2: tools an agent definition takes away (disallowedTools). Run it with
 * `pnpm course exercise check s06.2`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

type Request = RunOutcome["requests"][number];

/** The main agent is offered `task`; a child never is. */
const isMain = (r: Request) => toolNames(r).includes("task");

/** An agent definition in Claude Code's shape, with `extra` frontmatter lines. */
function agent(name: string, extra: string[] = []): string {
  return [
    "---",
    `name: ${name}`,
    `description: The ${name} agent.`,
    ...extra,
    "---",
    "Look, but do not change anything.",
    "",
  ].join("\n");
}

/**
 * The main agent hands one task to `type` (no type: general-purpose); the child answers its
 * first request with `first`, then "finished"; the main agent then says "done".
 */
async function delegate(
  files: Record<string, string>,
  type: string | undefined,
  first: ReturnType<typeof reply> = reply(text("finished")),
) {
  const run = await runExercise({
    files,
    prompts: ["delegate it"],
    steps: [
      {
        when: (r) => isMain(r) && !afterTools(r),
        reply: reply(
          toolUse("task", { prompt: "Have a look.", ...(type ? { subagent_type: type } : {}) }),
        ),
      },
      { when: (r) => !isMain(r) && !afterTools(r), reply: first },
      { when: (r) => !isMain(r) && afterTools(r), reply: reply(text("finished")) },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("done")) },
    ],
  });
  const child = run.requests.filter((r) => !isMain(r));
  return { run, child, offered: toolNames(child[0]!) };
}

it("leaves the tools that disallowedTools names out of the child's tools", async () => {
  const { offered } = await delegate(
    { ".claude/agents/reader.md": agent("reader", ["disallowedTools: Write, Edit"]) },
    "reader",
  );
  expect(offered).toEqual(["bash", "read_file", "glob"]);
});

it("takes disallowed tools away from what a tools line gives, in either naming", async () => {
  const { offered } = await delegate(
    {
      ".claude/agents/reader.md": agent("reader", [
        "tools: Read, Write, Bash",
        "disallowedTools:",
        "  - bash",
      ]),
    },
    "reader",
  );
  expect(offered).toEqual(["read_file", "write_file"]);
});

it("answers a call to a disallowed tool as an unknown tool, and nothing is written", async () => {
  const { run, child } = await delegate(
    { ".claude/agents/reader.md": agent("reader", ["disallowedTools: Write, Edit"]) },
    "reader",
    reply(toolUse("write_file", { path: "out.txt", content: "written\n" })),
  );
  const result = lastToolResults(child[1]!)[0]!;
  expect({ content: result.content, isError: result.is_error }).toEqual({
    content: "Error: Unknown tool 'write_file'. Available tools: bash, read_file, glob",
    isError: true,
  });
  expect(existsSync(path.join(run.workdir, "out.txt")), "out.txt was not written").toBe(false);
});

it("gives general-purpose children and agents without the line every tool, as before", async () => {
  const files = { ".claude/agents/plain.md": agent("plain") };
  const all = ["bash", "read_file", "write_file", "edit_file", "glob"];
  expect((await delegate(files, undefined)).offered).toEqual(all);
  expect((await delegate(files, "plain")).offered).toEqual(all);
});

it("skips a definition whose disallowedTools is not a list of names, saying why", async () => {
  const run = await runExercise({
    files: {
      ".claude/agents/bad.md": agent("bad", ["disallowedTools:", "  Write: true"]),
      ".claude/agents/reader.md": agent("reader", ["disallowedTools: Write"]),
    },
    prompts: [],
  });
  expect(run.output).toContain(
    "[agents] .claude/agents/bad.md: disallowedTools is a mapping; write names separated by commas, or a list; skipped",
  );
  expect(run.output).toContain("[agents] 1 agent(s): reader (.claude/agents/reader.md)");
});

it("shows each definition's disallowedTools in /agents", async () => {
  const run = await runExercise({
    files: {
      ".claude/agents/reader.md": agent("reader", [
        "disallowedTools: Write, Edit",
        "model: inherit",
      ]),
      ".claude/agents/plain.md": agent("plain"),
    },
    prompts: ["/agents"],
  });
  expect(run.output).toContain(
    "- reader: The reader agent.\n    .claude/agents/reader.md (every tool, disallowedTools: Write, Edit, model: inherit)",
  );
  expect(run.output).toContain(
    "- plain: The plain agent.\n    .claude/agents/plain.md (every tool)",
  );
});
