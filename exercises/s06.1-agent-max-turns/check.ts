/**
 * s06.1: a turn budget per agent definition (maxTurns). Run it with
 * `pnpm course exercise check s06.1`.
 */
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
    "Answer in as few steps as you can.",
    "",
  ].join("\n");
}

/**
 * The main agent hands one task to `type`; the child answers with `child` to every request
 * (a child that keeps calling glob never finishes), then the main agent says "done".
 */
async function delegate(
  files: Record<string, string>,
  type: string,
  child: (r: Request) => ReturnType<typeof reply>,
) {
  const run = await runExercise({
    files: { "notes.md": "# notes\n", ...files },
    prompts: ["delegate it"],
    steps: [
      {
        when: (r) => isMain(r) && !afterTools(r),
        reply: reply(toolUse("task", { prompt: "Find the notes.", subagent_type: type })),
      },
      { when: (r) => !isMain(r), reply: child, repeat: true },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("done")) },
    ],
  });
  const last = run.requests.at(-1)!;
  const result = lastToolResults(last)[0]!;
  return {
    run,
    childCalls: run.requests.filter((r) => !isMain(r)).length,
    content: String(result.content),
    isError: result.is_error === true,
  };
}

const keepsSearching = () => reply(toolUse("glob", { pattern: "*.md" }));

it("stops a defined agent's child after the model calls its maxTurns allows", async () => {
  const result = await delegate(
    { ".claude/agents/quick.md": agent("quick", ["maxTurns: 2"]) },
    "quick",
    keepsSearching,
  );
  expect(result.childCalls).toBe(2);
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "Subagent stopped after 2 turns without a final answer.",
    isError: true,
  });
  expect(result.run.output).toContain("[Subagent stopped]");
});

it("returns the child's answer as before when it finishes within its maxTurns", async () => {
  const result = await delegate(
    { ".claude/agents/quick.md": agent("quick", ["maxTurns: 3"]) },
    "quick",
    (r) => (afterTools(r) ? reply(text("notes.md")) : keepsSearching()),
  );
  expect(result.childCalls).toBe(2);
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "notes.md",
    isError: false,
  });
});

it("keeps the cap of 30 model calls for an agent without maxTurns", async () => {
  const result = await delegate(
    { ".claude/agents/plain.md": agent("plain") },
    "plain",
    keepsSearching,
  );
  expect(result.childCalls).toBe(30);
  expect(result.content).toBe("Subagent stopped after 30 turns without a final answer.");
});

it("skips a definition whose maxTurns is not a whole number of at least 1, saying why", async () => {
  const run = await runExercise({
    files: {
      ".claude/agents/words.md": agent("words", ["maxTurns: three"]),
      ".claude/agents/zero.md": agent("zero", ["maxTurns: 0"]),
      ".claude/agents/quick.md": agent("quick", ["maxTurns: 2"]),
    },
    prompts: [],
  });
  expect(run.output).toContain(
    '[agents] .claude/agents/words.md: maxTurns "three" is not a whole number of at least 1; skipped',
  );
  expect(run.output).toContain(
    "[agents] .claude/agents/zero.md: maxTurns 0 is not a whole number of at least 1; skipped",
  );
  expect(run.output).toContain("[agents] 1 agent(s): quick (.claude/agents/quick.md)");
});

it("shows each definition's maxTurns in /agents", async () => {
  const run = await runExercise({
    files: {
      ".claude/agents/quick.md": agent("quick", ["tools: Read, Glob", "maxTurns: 2"]),
      ".claude/agents/plain.md": agent("plain"),
    },
    prompts: ["/agents"],
  });
  expect(run.output).toContain(
    "- quick: The quick agent.\n    .claude/agents/quick.md (tools: Read, Glob, maxTurns: 2)",
  );
  expect(run.output).toContain(
    "- plain: The plain agent.\n    .claude/agents/plain.md (every tool)",
  );
});
