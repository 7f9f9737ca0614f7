/**
 * s02.2: edit_file with Claude Code's two rules. Run it with `pnpm course exercise check s02.2`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  reply,
  runExercise,
  text,
  toolUse,
} from "../../tests/helpers/exercise.ts";

const NOTES = "let count = 1;\ncount = count + 1;\nprint(total);\n";

/** One edit_file call on notes.js; what the model got back and the file afterwards. */
async function edit(input: Record<string, unknown>) {
  const run = await runExercise({
    files: { "notes.js": NOTES },
    prompts: ["edit it"],
    steps: [
      {
        when: (r) => !afterTools(r),
        reply: reply(toolUse("edit_file", { path: "notes.js", ...input })),
      },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  return {
    content: String(result.content),
    isError: result.is_error === true,
    file: readFileSync(path.join(run.workdir, "notes.js"), "utf8"),
    run,
  };
}

it("offers edit_file a replace_all flag that is not required", async () => {
  const { run } = await edit({ old_text: "total", new_text: "count" });
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: Record<string, { type?: string }>; required?: string[] };
    }>
  ).find((t) => t.name === "edit_file")!;
  expect(tool.input_schema.properties.replace_all?.type).toBe("boolean");
  expect(tool.input_schema.required).not.toContain("replace_all");
});

it("replaces every occurrence with replace_all, and says how many", async () => {
  const result = await edit({ old_text: "count", new_text: "total", replace_all: true });
  expect(result.content).toBe("Edited notes.js (3 replacements)");
  expect(result.file).toBe("let total = 1;\ntotal = total + 1;\nprint(total);\n");
});

it("still replaces a unique old_text once, as before", async () => {
  const result = await edit({ old_text: "print(total)", new_text: "print(count)" });
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "Edited notes.js",
    isError: false,
  });
  expect(result.file).toBe("let count = 1;\ncount = count + 1;\nprint(count);\n");
});

it("refuses an old_text that occurs more than once without replace_all, and leaves the file alone", async () => {
  const result = await edit({ old_text: "count", new_text: "total" });
  expect(result.isError).toBe(true);
  expect(result.content).toBe(
    "Error: old_text occurs 3 times in notes.js; give more context to make it unique, or set replace_all",
  );
  expect(result.file).toBe(NOTES);
});

it("reports text that is not there, with or without replace_all", async () => {
  for (const replace_all of [false, true]) {
    const result = await edit({ old_text: "missing", new_text: "x", replace_all });
    expect({ content: result.content, isError: result.isError }).toEqual({
      content: "Error: text not found in notes.js",
      isError: true,
    });
  }
});
