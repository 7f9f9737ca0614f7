/**
 * s04.2: PostToolUseFailure command hooks. Run it with `pnpm course exercise check s04.2`.
 */
import { readFileSync } from "node:fs";
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
  toolUse,
} from "../../tests/helpers/exercise.ts";

/** A settings file with command hooks: `{ Event: [[matcher, command], …] }`. */
function settings(hooks: Record<string, Array<[string, string]>>) {
  const section: Record<string, unknown[]> = {};
  for (const [event, list] of Object.entries(hooks)) {
    section[event] = list.map(([matcher, command]) => ({
      matcher,
      hooks: [{ type: "command", command }],
    }));
  }
  return { ".claude/settings.json": JSON.stringify({ hooks: section }) };
}

/** One round of `calls` (id, tool, input), then a final answer; the hooks in `hooks`. */
function round(
  hooks: Record<string, Array<[string, string]>>,
  calls: Array<[string, string, Record<string, unknown>]>,
): Promise<RunOutcome> {
  return runExercise({
    files: { ...settings(hooks), "notes.txt": "one\n" },
    prompts: ["go"],
    steps: [
      {
        when: (r) => !afterTools(r),
        reply: reply(...calls.map(([id, name, input]) => toolUse(name, input, id))),
      },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
}

/** The results the model got back for the round, by tool_use id. */
function results(run: RunOutcome): Record<string, { content: string; isError: boolean }> {
  return Object.fromEntries(
    lastToolResults(run.requests[1]!).map((r) => [
      r.tool_use_id,
      { content: String(r.content), isError: r.is_error === true },
    ]),
  );
}

const FAILING = { command: "echo oops; exit 3" };
const FAILED = "Error: command exited with status 3\noops";

it("accepts PostToolUseFailure hooks with a matcher, and lists them in the banner", async () => {
  const run = await round({ PostToolUseFailure: [["Bash", "true"]] }, [
    ["toolu_a", "bash", { command: "echo fine" }],
  ]);
  expect(run.output).toContain(
    "[hook] PostToolUseFailure (matcher Bash): true from .claude/settings.json",
  );
  expect(run.output).not.toContain("hooks.PostToolUseFailure is not an event this chapter has");
});

it("runs a PostToolUseFailure hook after a call that failed, with the error on stdin", async () => {
  const run = await round(
    { PostToolUseFailure: [["Bash", 'cat > "$CLAUDE_PROJECT_DIR/failure.json"']] },
    [["toolu_fail", "bash", FAILING]],
  );
  const input = JSON.parse(readFileSync(path.join(run.workdir, "failure.json"), "utf8")) as Record<
    string,
    unknown
  >;
  expect(input).toMatchObject({
    hook_event_name: "PostToolUseFailure",
    tool_name: "Bash",
    tool_input: FAILING,
    tool_use_id: "toolu_fail",
    error: FAILED,
    cwd: run.workdir,
  });
  expect(input).not.toHaveProperty("tool_response");
});

it("runs PostToolUse hooks only after a success, and PostToolUseFailure hooks only after a failure", async () => {
  const log = (word: string) =>
    `node -e "const i=JSON.parse(require('fs').readFileSync(0,'utf8'));` +
    `require('fs').appendFileSync('hooks.log','${word} '+i.tool_use_id+'\\n')"`;
  const run = await round(
    {
      PostToolUse: [["Bash|Read", log("post")]],
      PostToolUseFailure: [["Bash|Read", log("failure")]],
    },
    [
      ["toolu_1", "bash", { command: "echo fine" }],
      ["toolu_2", "bash", FAILING],
      ["toolu_3", "read_file", { path: "notes.txt" }],
      ["toolu_4", "read_file", { path: "missing.txt" }],
    ],
  );
  expect(readFileSync(path.join(run.workdir, "hooks.log"), "utf8")).toBe(
    "post toolu_1\nfailure toolu_2\npost toolu_3\nfailure toolu_4\n",
  );
});

it("adds a PostToolUseFailure block to the failed result as feedback", async () => {
  const run = await round(
    { PostToolUseFailure: [["Bash", "echo 'run it with --verbose' >&2; exit 2"]] },
    [["toolu_fail", "bash", FAILING]],
  );
  expect(results(run).toolu_fail).toEqual({
    content: `${FAILED}\nPostToolUseFailure hook feedback: run it with --verbose`,
    isError: true,
  });
});

it("adds a PostToolUseFailure hook's additionalContext after the failed result", async () => {
  const json = JSON.stringify({
    hookSpecificOutput: {
      hookEventName: "PostToolUseFailure",
      additionalContext: "the build cache may be stale",
    },
  });
  const run = await round({ PostToolUseFailure: [["Bash", `echo '${json}'`]] }, [
    ["toolu_fail", "bash", FAILING],
    ["toolu_ok", "bash", { command: "echo fine" }],
  ]);
  expect(results(run)).toEqual({
    toolu_fail: {
      content: `${FAILED}\nPostToolUseFailure hook context: the build cache may be stale`,
      isError: true,
    },
    toolu_ok: { content: "fine", isError: false },
  });
});
