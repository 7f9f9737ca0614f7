/**
 * s03.2: plan mode (permissions.defaultMode: "plan"). Run it with
 * `pnpm course exercise check s03.2`.
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

type Settings = Record<string, unknown>;

const NOTES = "first draft\n";
const PLAN_DENIAL =
  "Permission denied by plan mode: files are not changed while planning; present your plan instead.";
const PLAN_LINE =
  "Plan mode is on: files cannot be changed and commands need approval. Read what you need, then present your plan.";
const NO_TERMINAL =
  "but stdin is not a terminal; an allow rule in .claude/settings.json can permit this call.";

/** `calls` in turn (each the next reply's one tool call), then a final answer. */
function session(
  calls: Array<[string, Record<string, unknown>]>,
  settings: Settings,
  local?: Settings,
): Promise<RunOutcome> {
  return runExercise({
    files: {
      "notes.md": NOTES,
      ".claude/settings.json": JSON.stringify(settings),
      ...(local ? { ".claude/settings.local.json": JSON.stringify(local) } : {}),
    },
    prompts: ["plan it"],
    steps: [
      ...calls.map(([name, input], i) => ({
        when: (r: Parameters<typeof afterTools>[0]) => (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
}

/** The result of the `n`th tool call of a session (0-based). */
function result(run: RunOutcome, n: number): { content: string; isError: boolean } {
  const block = lastToolResults(run.requests[n + 1]!)[0]!;
  return { content: String(block.content), isError: block.is_error === true };
}

const notes = (run: RunOutcome) => readFileSync(path.join(run.workdir, "notes.md"), "utf8");

it("refuses every write in plan mode, even one an allow rule permits", async () => {
  const run = await session(
    [
      ["write_file", { path: "plan.md", content: "x" }],
      ["edit_file", { path: "notes.md", old_text: "first", new_text: "second" }],
    ],
    { permissions: { defaultMode: "plan", allow: ["Edit"] } },
  );
  expect(result(run, 0)).toEqual({ content: PLAN_DENIAL, isError: true });
  expect(result(run, 1)).toEqual({ content: PLAN_DENIAL, isError: true });
  expect(notes(run)).toBe(NOTES);
  expect(run.output).toContain(`[denied] ${PLAN_DENIAL}`);
});

it("asks before a command in plan mode unless an allow rule permits it, and still reads", async () => {
  const run = await session(
    [
      ["bash", { command: "ls" }],
      ["bash", { command: "echo allowed" }],
      ["read_file", { path: "notes.md" }],
    ],
    { permissions: { defaultMode: "plan", allow: ["Bash(echo:*)"] } },
  );
  expect(result(run, 0)).toEqual({
    content: `Permission denied: approval needed (Plan mode: commands need approval) ${NO_TERMINAL}`,
    isError: true,
  });
  expect(result(run, 1)).toEqual({ content: "allowed", isError: false });
  expect(result(run, 2)).toEqual({ content: "first draft", isError: false });
});

it("tells the model and the banner that plan mode is on", async () => {
  const run = await session([["read_file", { path: "notes.md" }]], {
    permissions: { defaultMode: "plan" },
  });
  expect(String(run.requests[0]!.system)).toContain(PLAN_LINE);
  expect(run.output.split("\n")).toContain("[permissions] mode: plan (.claude/settings.json)");
});

it("takes the mode of settings.local.json over that of settings.json", async () => {
  const run = await session(
    [["edit_file", { path: "notes.md", old_text: "first", new_text: "second" }]],
    { permissions: { defaultMode: "plan" } },
    { permissions: { defaultMode: "default" } },
  );
  expect(result(run, 0)).toEqual({ content: "Edited notes.md", isError: false });
  expect(notes(run)).toBe("second draft\n");
  expect(run.output.split("\n")).toContain(
    "[permissions] mode: default (.claude/settings.local.json)",
  );
  expect(String(run.requests[0]!.system)).not.toContain("Plan mode is on");
});

it("reports a mode this chapter does not know, and keeps the default", async () => {
  const run = await session([["write_file", { path: "plan.md", content: "x" }]], {
    permissions: { defaultMode: "acceptEdits" },
  });
  const file = path.join(run.workdir, ".claude", "settings.json");
  expect(run.output).toContain(
    `[settings] ${file}: permissions.defaultMode "acceptEdits" is not supported here (default or plan); ignored`,
  );
  expect(result(run, 0)).toEqual({ content: "Wrote 1 bytes to plan.md", isError: false });
  expect(run.output).not.toContain("[permissions] mode:");
});
