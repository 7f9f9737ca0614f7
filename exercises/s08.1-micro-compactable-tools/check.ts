/**
 * s08.1: L2 compacts only what a tool call can fetch again. Run it with
 * `pnpm course exercise check s08.1`.
 */
import {
  expect,
  it,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

const PLACEHOLDER = "[Earlier tool result compacted. Re-run if needed.]";

/** Notes long enough for L2 (over 120 characters), and one skill. */
const FILES = {
  "notes/a.md": `Note A: ${"the staging database is read-only until Thursday. ".repeat(4)}`,
  "notes/b.md": `Note B: ${"ask Dana before any change to billing. ".repeat(4)}`,
  "notes/c.md": `Note C: ${"the release is on Friday. ".repeat(6)}`,
  "skills/deploy/SKILL.md": [
    "---",
    "name: deploy",
    "description: How to deploy this project",
    "---",
    "",
    "Run the checks first, then tag the release and push the tag.",
    "Never deploy on a Friday afternoon; announce the deploy in #ops before you start.",
    "",
  ].join("\n"),
};

/** Only the last seen result stays whole, so every older one is L2's to judge. */
const ENV = { L2_COMPACT_KEEP_RECENT: "1" };

const REPORT = `Subagent report: ${"the billing module has three entry points and one cron job. ".repeat(3)}`;

/**
 * Every reply in turn (the main agent's tool calls, and a subagent's answer when the main
 * agent delegates), then a final answer.
 */
function session(replies: Array<ReturnType<typeof reply>>): Promise<RunOutcome> {
  return runExercise({
    files: FILES,
    env: ENV,
    prompts: ["look around"],
    steps: [...replies, reply(text("done"))].map((answer) => ({ reply: answer })),
  });
}

const read = (file: string) => reply(toolUse("read_file", { path: file }));

/** The main agent's requests (a subagent is never offered `task`). */
const mainRequests = (run: RunOutcome) =>
  run.requests.filter((request) => toolNames(request).includes("task"));

/** Every tool result a request carries, in order, with the tool that made it. */
function results(request: RunOutcome["requests"][number]) {
  const tools = new Map<string, string>();
  const found: Array<{ tool: string; content: string }> = [];
  for (const message of request.messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "tool_use") tools.set(block.id, block.name);
      if (block.type === "tool_result") {
        found.push({ tool: tools.get(block.tool_use_id) ?? "?", content: String(block.content) });
      }
    }
  }
  return found;
}

/** Each result as the main agent's last request carried it, and as it first arrived. */
function lastAndFirst(run: RunOutcome) {
  const requests = mainRequests(run);
  const last = results(requests.at(-1)!);
  const first = last.map((_, i) => results(requests[i + 1]!)[i]!.content);
  return { last, first };
}

it("leaves a loaded skill whole while the file results after it become placeholders", async () => {
  const run = await session([
    reply(toolUse("load_skill", { name: "deploy" })),
    read("notes/a.md"),
    read("notes/b.md"),
    read("notes/c.md"),
  ]);
  const { last, first } = lastAndFirst(run);
  expect(first[0]).toContain("Never deploy on a Friday afternoon");
  expect(last).toEqual([
    { tool: "load_skill", content: first[0] },
    { tool: "read_file", content: PLACEHOLDER },
    { tool: "read_file", content: first[2] },
    { tool: "read_file", content: first[3] },
  ]);
});

it("leaves a subagent's report whole", async () => {
  const run = await session([
    reply(toolUse("task", { prompt: "Map the billing module." })),
    reply(text(REPORT)),
    read("notes/a.md"),
    read("notes/b.md"),
    read("notes/c.md"),
  ]);
  const { last, first } = lastAndFirst(run);
  expect(first[0]).toContain("the billing module has three entry points");
  expect(last.map((result) => result.content)).toEqual([first[0], PLACEHOLDER, first[2], first[3]]);
});

it("keeps the last L2_COMPACT_KEEP_RECENT results it may compact whole: a skill does not count", async () => {
  const run = await session([
    read("notes/a.md"),
    read("notes/b.md"),
    reply(toolUse("load_skill", { name: "deploy" })),
    read("notes/c.md"),
  ]);
  const { last, first } = lastAndFirst(run);
  expect(last.map((result) => result.content)).toEqual([PLACEHOLDER, first[1], first[2], first[3]]);
  expect(run.output).toContain("[compact L2] 1 result(s) compacted");
});

it("still compacts old bash and read_file results", async () => {
  const run = await session([
    reply(toolUse("bash", { command: "cat notes/a.md notes/b.md" })),
    read("notes/c.md"),
    read("notes/b.md"),
    read("notes/a.md"),
  ]);
  const { last, first } = lastAndFirst(run);
  expect(first[0]).toContain("Note A:");
  expect(last.map((result) => result.content)).toEqual([
    PLACEHOLDER,
    PLACEHOLDER,
    first[2],
    first[3],
  ]);
});
