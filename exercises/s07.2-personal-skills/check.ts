/**
 * s07.2: personal skills from ~/.claude/skills. Run it with `pnpm course exercise check s07.2`.
 */
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  tempWorkspace,
  text,
  toolUse,
  writeFiles,
} from "../../tests/helpers/exercise.ts";

const REVIEW = "---\nname: review\ndescription: Review code for bugs.\n---\nList each bug.\n";
const GREET =
  "---\nname: greet\ndescription: Say hello in three languages.\n---\nGreet $ARGUMENTS in English, French and Japanese.\n";

/** A home folder holding `skills` under .claude/skills/ (each path: folder/SKILL.md). */
function homeWith(skills: Record<string, string>): string {
  const home = tempWorkspace("home");
  writeFiles(
    home,
    Object.fromEntries(
      Object.entries(skills).map(([file, body]) => [`.claude/skills/${file}`, body]),
    ),
  );
  return home;
}

/** The system prompt of a request, as one string. */
function system(run: RunOutcome, n = 0): string {
  const prompt = run.requests[n]!.system ?? "";
  return typeof prompt === "string" ? prompt : prompt.map((block) => block.text).join("\n");
}

/** The text the first request's last user message carries. */
function sent(run: RunOutcome): string {
  const last = run.requests[0]!.messages.at(-1)!;
  if (typeof last.content === "string") return last.content;
  const first = last.content.find((block) => block.type === "text");
  return first?.type === "text" ? first.text : "";
}

it("lists a skill from ~/.claude/skills in the catalog, after the project's", async () => {
  const home = homeWith({ "greet/SKILL.md": GREET });
  const run = await runExercise({
    files: { "skills/review/SKILL.md": REVIEW },
    env: { HOME: home },
    prompts: ["hi"],
    steps: [{ when: () => true, reply: reply(text("hello")) }],
  });
  expect(system(run)).toContain(
    "Skills available:\n- review: Review code for bugs.\n- greet: Say hello in three languages.\n",
  );
  expect(run.output).toContain("[skills] 2 skill(s): review, greet");
});

it("loads a personal skill with its own folder as the base directory", async () => {
  const home = homeWith({ "greet/SKILL.md": GREET });
  const run = await runExercise({
    env: { HOME: home },
    prompts: ["greet Ana"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("load_skill", { name: "greet" })) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  expect({ content: result.content, isError: result.is_error === true }).toEqual({
    content: `Base directory for this skill: ${home}/.claude/skills/greet\n\n${GREET}`,
    isError: false,
  });
});

it("keeps the project's skill when both have its name, and reports the personal one", async () => {
  const home = homeWith({ "review/SKILL.md": REVIEW.replace("for bugs", "for style") });
  const run = await runExercise({
    files: { "skills/review/SKILL.md": REVIEW },
    env: { HOME: home },
    prompts: ["hi"],
    steps: [{ when: () => true, reply: reply(text("hello")) }],
  });
  expect(run.output).toContain(
    "[skills] duplicate skill name 'review' in ~/.claude/skills/review/SKILL.md ignored (kept skills/review/SKILL.md)",
  );
  expect(system(run)).toContain("- review: Review code for bugs.");
  expect(system(run)).not.toContain("for style");
});

it("names a personal skill's problems by its path under ~/", async () => {
  const home = homeWith({ "hello/SKILL.md": "---\nname: hello\n---\nSay hello.\n" });
  const run = await runExercise({ env: { HOME: home }, prompts: [] });
  expect(run.output).toContain(
    "[skills] ~/.claude/skills/hello/SKILL.md: description is missing; using the body's first line",
  );
  expect(run.output).toContain("[skills] 1 skill(s): hello");
});

it("makes a personal skill a command too: /greet sends it", async () => {
  const home = homeWith({ "greet/SKILL.md": GREET });
  const run = await runExercise({
    env: { HOME: home },
    prompts: ["/greet Ana"],
    steps: [{ when: () => true, reply: reply(text("Hello, Ana!")) }],
  });
  expect(sent(run)).toBe(
    `Base directory for this skill: ${home}/.claude/skills/greet\n\nGreet Ana in English, French and Japanese.`,
  );
});
