/**
 * s08.2: loaded skills survive a summary. Run it with `pnpm course exercise check s08.2`.
 */
import {
  expect,
  it,
  lastMentions,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

const HEADING = "Skills loaded before this summary:";

const skill = (name: string, rule: string) =>
  ["---", `name: ${name}`, `description: The ${name} checklist`, "---", "", rule, ""].join("\n");

const FILES = {
  "skills/deploy/SKILL.md": skill("deploy", "Tag the release, push the tag, announce it in #ops."),
  "skills/review/SKILL.md": skill("review", "Read the whole diff before you comment on a line."),
};

/**
 * The typed `lines` against the main agent's `replies` in turn (each a tool call or an
 * answer); every summary call is answered with the same short summary.
 */
function session(
  lines: string[],
  replies: Array<ReturnType<typeof reply>>,
  env: Record<string, string> = {},
): Promise<RunOutcome> {
  return runExercise({
    files: FILES,
    env,
    prompts: lines,
    steps: [
      {
        when: (r) => toolNames(r).length === 0,
        reply: reply(text("The user is releasing version 2.")),
        repeat: true,
      },
      ...replies.map((answer) => ({ reply: answer })),
    ],
  });
}

const load = (name: string) => reply(toolUse("load_skill", { name }));

/** The first message of the main agent's request for the typed `line`: the summary message. */
function summaryBefore(run: RunOutcome, line: string): string {
  const request = run.requests.find((r) => toolNames(r).length > 0 && lastMentions(line)(r));
  const first = request?.messages[0]?.content;
  if (typeof first !== "string") throw new Error(`no summary message before '${line}'`);
  return first;
}

/** What load_skill answered the model for each skill, from the first request after it. */
function answers(run: RunOutcome): Map<string, string> {
  const found = new Map<string, string>();
  for (const request of run.requests) {
    const calls = new Map<string, string>();
    for (const message of request.messages) {
      if (typeof message.content === "string") continue;
      for (const block of message.content) {
        if (block.type === "tool_use" && block.name === "load_skill")
          calls.set(block.id, String((block.input as { name: string }).name));
        if (block.type === "tool_result" && calls.has(block.tool_use_id) && !block.is_error)
          found.set(calls.get(block.tool_use_id)!, String(block.content));
      }
    }
  }
  return found;
}

/** What follows the heading, which must come right after the `Full transcript:` line. */
function attached(summary: string): string {
  const at = summary.indexOf(`\n\n${HEADING}\n\n`);
  expect(at, `the summary message has no "${HEADING}" part:\n${summary}`).toBeGreaterThan(-1);
  expect(summary.slice(0, at)).toMatch(/\nFull transcript: \S+\.jsonl$/);
  return summary.slice(at + HEADING.length + 4);
}

it("attaches a skill loaded before /compact to the summary message", async () => {
  const run = await session(
    ["release it", "/compact", "what next?"],
    [load("deploy"), reply(text("Released.")), reply(text("Nothing."))],
  );
  const deploy = answers(run).get("deploy")!;
  expect(deploy).toContain("Tag the release, push the tag");
  expect(attached(summaryBefore(run, "what next?"))).toBe(deploy.trimEnd());
});

it("attaches each skill once, in the order first loaded, and never a failed load", async () => {
  const run = await session(
    ["release it", "/compact", "what next?"],
    [
      load("review"),
      load("nope"),
      load("deploy"),
      load("review"),
      reply(text("Released.")),
      reply(text("Nothing.")),
    ],
  );
  const { review, deploy } = Object.fromEntries(answers(run));
  expect(attached(summaryBefore(run, "what next?"))).toBe(
    `${review!.trimEnd()}\n\n${deploy!.trimEnd()}`,
  );
});

it("keeps the skills through a second summary", async () => {
  const run = await session(
    ["release it", "/compact", "/compact", "what next?"],
    [load("deploy"), reply(text("Released.")), reply(text("Nothing."))],
  );
  expect(attached(summaryBefore(run, "what next?"))).toBe(answers(run).get("deploy")!.trimEnd());
});

it("attaches them to an automatic summary too", async () => {
  const run = await session(
    ["release it", "what next?"],
    [load("deploy"), reply(text("Released.")), reply(text("Nothing."))],
    { L4_COMPACT_CONTEXT_LIMIT: "1000" },
  );
  expect(run.output).toContain("[compact L4] auto summary");
  expect(attached(summaryBefore(run, "what next?"))).toBe(answers(run).get("deploy")!.trimEnd());
});

it("leaves the summary message as it was when no skill was loaded", async () => {
  const run = await session(
    ["hello", "/compact", "what next?"],
    [reply(text("Hi.")), reply(text("Nothing."))],
  );
  expect(summaryBefore(run, "what next?")).toMatch(
    /^\[Compacted\]\n\nCurrent user request:\nhello\n\nConversation summary \(reference only\):\n"The user is releasing version 2\."\n\nFull transcript: \S+\.jsonl$/,
  );
});
