/**
 * s05.1: todo items with an activeForm. Run it with `pnpm course exercise check s05.1`.
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
  toolUse,
} from "../../tests/helpers/exercise.ts";

/** One todo_write call with `todos`, then a final answer; what the model got back. */
async function write(
  todos: unknown[],
): Promise<{ run: RunOutcome; content: string; isError: boolean }> {
  const run = await runExercise({
    prompts: ["plan it"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("todo_write", { todos })) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  return { run, content: String(result.content), isError: result.is_error === true };
}

const PLAN = [
  { content: "Write greet.mjs", activeForm: "Writing greet.mjs", status: "completed" },
  { content: "Write a test for it", activeForm: "Writing a test for it", status: "in_progress" },
  { content: "Run the test", activeForm: "Running the test", status: "pending" },
];

it("offers todo_write items an activeForm that is required, next to content", async () => {
  const { run } = await write(PLAN);
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: {
        properties: {
          todos: {
            items: { properties: Record<string, { type?: string }>; required?: string[] };
          };
        };
      };
    }>
  ).find((t) => t.name === "todo_write")!;
  const items = tool.input_schema.properties.todos.items;
  expect(items.properties.activeForm?.type).toBe("string");
  expect([...(items.required ?? [])].sort()).toEqual(["activeForm", "content"]);
});

it("refuses an item without activeForm, naming it", async () => {
  const result = await write([PLAN[0], { content: "Write a test for it", status: "in_progress" }]);
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "Error: Invalid input for todo_write: todos[1].activeForm is required",
    isError: true,
  });
  expect(result.run.output).not.toContain("## Current Tasks");
});

it("refuses an activeForm of only spaces, as the list refuses blank content", async () => {
  const result = await write([PLAN[0], { ...PLAN[1], activeForm: "   " }]);
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "Error: todos[1] requires activeForm",
    isError: true,
  });
});

it("shows the item in progress by its activeForm, the others by their content", async () => {
  const result = await write(PLAN);
  const rendered =
    "[x] Write greet.mjs\n[>] Writing a test for it\n[ ] Run the test\n\n(1/3 completed)";
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: rendered,
    isError: false,
  });
  expect(result.run.output).toContain(`## Current Tasks\n${rendered}`);
});

it("trims activeForm as it trims content", async () => {
  const result = await write([
    { content: " Run the test ", activeForm: "  Running the test  ", status: "in_progress" },
  ]);
  expect(result.content).toBe("[>] Running the test\n\n(0/1 completed)");
});
