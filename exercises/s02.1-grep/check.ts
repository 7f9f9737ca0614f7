/**
 * s02.1: a `grep` tool with a path target. Run it with `pnpm course exercise check s02.1`.
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

const FILES = {
  "notes.txt": "alpha\nTODO: write the tests\nomega\n",
  "src/app.ts": "const a = 1;\n// TODO: name things\n",
  "src/lib/util.ts": "export const TODO_LIST = [];\n",
  ".hidden/secret.txt": "TODO: not listed\n",
};

/** One grep call with `input`, then a final answer; the result the model got back. */
async function grep(
  input: Record<string, unknown>,
): Promise<{ run: RunOutcome; content: string; isError: boolean }> {
  const run = await runExercise({
    files: FILES,
    prompts: ["search"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("grep", input)) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  return { run, content: String(result.content), isError: result.is_error === true };
}

it("offers the model a grep tool that takes a pattern and a path", async () => {
  const run = await runExercise({
    prompts: ["hi"],
    steps: [{ when: () => true, reply: reply(text("hello")) }],
  });
  expect(toolNames(run.requests[0]!)).toContain("grep");
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "grep")!;
  expect(Object.keys(tool.input_schema.properties).sort()).toEqual(["path", "pattern"]);
  expect(tool.input_schema.required).toEqual(["pattern"]);
});

it("finds matching lines under a folder, as path:line: text, files in name order", async () => {
  const { content, isError } = await grep({ pattern: "TODO", path: "src" });
  expect(isError).toBe(false);
  expect(content).toBe(
    "src/app.ts:2: // TODO: name things\nsrc/lib/util.ts:1: export const TODO_LIST = [];",
  );
});

it("searches the whole workspace without a path, and one file when the path names a file", async () => {
  const all = await grep({ pattern: "TODO:" });
  expect(all.content).toBe(
    "notes.txt:2: TODO: write the tests\nsrc/app.ts:2: // TODO: name things",
  );
  const one = await grep({ pattern: "^o", path: "notes.txt" });
  expect(one.content).toBe("notes.txt:3: omega");
});

it("says so when nothing matches", async () => {
  const { content, isError } = await grep({ pattern: "nowhere" });
  expect({ content, isError }).toEqual({ content: "No matches for nowhere", isError: false });
});

it("refuses a path outside the workspace, as read_file does", async () => {
  const { content, isError } = await grep({ pattern: "root", path: "/etc" });
  expect({ content, isError }).toEqual({
    content: "Error: Path escapes workspace: /etc",
    isError: true,
  });
});

it("reports a pattern that is not a regular expression as an error", async () => {
  const { content, isError } = await grep({ pattern: "(" });
  expect(isError).toBe(true);
  expect(content).toMatch(/^Error: Invalid regular expression/);
});
