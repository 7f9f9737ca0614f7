/**
 * s07.1: a loaded skill's allowed-tools. Run it with `pnpm course exercise check s07.1`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastMentions,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

type Request = RunOutcome["requests"][number];

/** A skill in Claude Code's shape whose allowed-tools line is `allowed`. */
function skill(allowed: string): string {
  return [
    "---",
    "name: tidy",
    "description: Remove files the user no longer needs.",
    `allowed-tools: ${allowed}`,
    "---",
    "Remove each file the user names with rm, then say which ones went.",
    "",
  ].join("\n");
}

const FILES = {
  "skills/tidy/SKILL.md": skill("Bash(rm:*)"),
  "old.txt": "old\n",
  "other.txt": "other\n",
};

const rm = (file: string) => reply(toolUse("bash", { command: `rm ${file}` }));
const gone = (run: RunOutcome, file: string) => !existsSync(path.join(run.workdir, file));
/** The result of the last tool call before `request`. */
const resultBefore = (request: Request) => String(lastToolResults(request)[0]?.content);

const NEEDS_APPROVAL =
  /^Permission denied: approval needed \(Potentially destructive command: rm\)/;

it("runs a call the loaded skill's allowed-tools allow, without a question", async () => {
  const run = await runExercise({
    files: FILES,
    prompts: ["tidy up old.txt"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("load_skill", { name: "tidy" })) },
      { when: afterTools, reply: rm("old.txt") },
      { when: afterTools, reply: reply(text("old.txt is gone")) },
    ],
  });
  expect(gone(run, "old.txt"), "old.txt was removed").toBe(true);
  expect(run.output).toContain(
    "[allowed] by allowed-tools Bash(rm:*) of skill tidy (Potentially destructive command: rm)",
  );
  expect(resultBefore(run.requests[2]!)).not.toMatch(NEEDS_APPROVAL);
});

it("still asks when the model did not load the skill", async () => {
  const run = await runExercise({
    files: FILES,
    prompts: ["remove old.txt"],
    steps: [
      { when: (r) => !afterTools(r), reply: rm("old.txt") },
      { when: afterTools, reply: reply(text("could not")) },
    ],
  });
  expect(gone(run, "old.txt"), "old.txt is still there").toBe(false);
  expect(resultBefore(run.requests[1]!)).toMatch(NEEDS_APPROVAL);
});

it("holds for the turn that loaded the skill only", async () => {
  const run = await runExercise({
    files: FILES,
    prompts: ["tidy up old.txt", "now remove other.txt"],
    steps: [
      {
        when: (r) => lastMentions("tidy up")(r) && !afterTools(r),
        reply: reply(toolUse("load_skill", { name: "tidy" })),
      },
      { when: afterTools, reply: rm("old.txt") },
      { when: afterTools, reply: reply(text("old.txt is gone")) },
      { when: lastMentions("now remove"), reply: rm("other.txt") },
      { when: afterTools, reply: reply(text("could not")) },
    ],
  });
  expect(gone(run, "old.txt"), "old.txt was removed").toBe(true);
  expect(gone(run, "other.txt"), "other.txt is still there").toBe(false);
  expect(resultBefore(run.requests[4]!)).toMatch(NEEDS_APPROVAL);
});

it("allows only the calls its rules match", async () => {
  const run = await runExercise({
    files: { ...FILES, "skills/tidy/SKILL.md": skill("Bash(rm old.txt), Read") },
    prompts: ["tidy up"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("load_skill", { name: "tidy" })) },
      { when: afterTools, reply: rm("old.txt") },
      { when: afterTools, reply: rm("other.txt") },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  expect(gone(run, "old.txt"), "old.txt was removed").toBe(true);
  expect(run.output).toContain("[allowed] by allowed-tools Bash(rm old.txt) of skill tidy");
  expect(gone(run, "other.txt"), "other.txt is still there").toBe(false);
  expect(resultBefore(run.requests[3]!)).toMatch(NEEDS_APPROVAL);
});

it("does not extend to a subagent the turn starts", async () => {
  const isMain = (r: Request) => toolNames(r).includes("task");
  const run = await runExercise({
    files: FILES,
    prompts: ["tidy up old.txt"],
    steps: [
      {
        when: (r) => isMain(r) && !afterTools(r),
        reply: reply(toolUse("load_skill", { name: "tidy" })),
      },
      {
        when: (r) => isMain(r) && afterTools(r),
        reply: reply(toolUse("task", { prompt: "Remove old.txt with rm." })),
      },
      { when: (r) => !isMain(r) && !afterTools(r), reply: rm("old.txt") },
      { when: (r) => !isMain(r) && afterTools(r), reply: reply(text("could not")) },
      { when: (r) => isMain(r) && afterTools(r), reply: reply(text("done")) },
    ],
  });
  const child = run.requests.filter((r) => !isMain(r));
  expect(gone(run, "old.txt"), "old.txt is still there").toBe(false);
  expect(resultBefore(child[1]!)).toMatch(NEEDS_APPROVAL);
});
