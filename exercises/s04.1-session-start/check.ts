/**
 * s04.1: SessionStart command hooks. Run it with `pnpm course exercise check s04.1`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it, reply, runExercise, text } from "../../tests/helpers/exercise.ts";

/** A settings file with one command hook per entry: `{ Event: [command, …] }`. */
function settings(hooks: Record<string, string[]>) {
  const section: Record<string, unknown[]> = {};
  for (const [event, commands] of Object.entries(hooks)) {
    section[event] = commands.map((command) => ({ hooks: [{ type: "command", command }] }));
  }
  return { ".claude/settings.json": JSON.stringify({ hooks: section }) };
}

/** Two typed lines, each answered at once; the hooks in `hooks`. */
function session(hooks: Record<string, string[]>, prompts = ["hello", "again"]) {
  return runExercise({
    files: settings(hooks),
    prompts,
    steps: prompts.map((line) => ({ when: () => true, reply: reply(text(`answer to ${line}`)) })),
  });
}

/** What a request's first user message holds. */
function firstMessage(request: { messages: Array<{ content: unknown }> }): unknown {
  return request.messages[0]!.content;
}

it("accepts SessionStart hooks from the settings and lists them in the banner", async () => {
  const run = await session({ SessionStart: ["echo ready"] });
  expect(run.output).toContain("[hook] SessionStart: echo ready from .claude/settings.json");
  expect(run.output).not.toContain("hooks.SessionStart is not an event this chapter has");
});

it("runs a SessionStart hook once per session, before the first line's UserPromptSubmit, with source startup", async () => {
  const run = await session({
    SessionStart: ['cat > "$CLAUDE_PROJECT_DIR/start.json"; echo start >> order.txt'],
    UserPromptSubmit: ["echo prompt >> order.txt"],
  });
  const read = (name: string) => readFileSync(path.join(run.workdir, name), "utf8");
  expect(read("order.txt")).toBe("start\nprompt\nprompt\n");
  expect(JSON.parse(read("start.json"))).toMatchObject({
    hook_event_name: "SessionStart",
    source: "startup",
    cwd: run.workdir,
  });
});

it("puts its stdout before the first typed line as context, and only in the first message", async () => {
  const run = await session({ SessionStart: ["echo 'branch: main'"] });
  expect(firstMessage(run.requests[0]!)).toEqual([
    { type: "text", text: "SessionStart hook context: branch: main" },
    { type: "text", text: "hello" },
  ]);
  expect(run.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "again" });
});

it("takes hookSpecificOutput.additionalContext from JSON output, next to UserPromptSubmit's context", async () => {
  const json = JSON.stringify({
    hookSpecificOutput: { hookEventName: "SessionStart", additionalContext: "3 open issues" },
  });
  const run = await session({
    SessionStart: [`echo '${json}'`],
    UserPromptSubmit: ["echo 'time: noon'"],
  });
  expect(firstMessage(run.requests[0]!)).toEqual([
    { type: "text", text: "SessionStart hook context: 3 open issues" },
    { type: "text", text: "hello" },
    { type: "text", text: "time: noon" },
  ]);
});

it("never blocks: after a SessionStart hook exits 2, the first line is still sent", async () => {
  const run = await session({ SessionStart: ["touch started; echo 'not today' >&2; exit 2"] }, [
    "hello",
  ]);
  expect(readFileSync(path.join(run.workdir, "started"), "utf8")).toBe("");
  expect(run.requests).toHaveLength(1);
  expect(firstMessage(run.requests[0]!)).toBe("hello");
});
