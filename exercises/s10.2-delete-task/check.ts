/**
 * s10.2: deleting a task, and the edges that point at it. Run it with
 * `pnpm course exercise check s10.2`.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

/** A task file as the chapter's store writes it (pretty JSON, a final newline). */
function taskFile(id: string, subject: string, fields: Record<string, unknown> = {}) {
  const task = {
    id,
    subject,
    description: "",
    status: "pending",
    owner: null,
    blockedBy: [],
    priority: 5,
    ...fields,
  };
  return { [`.harness/tasks/${id}.json`]: `${JSON.stringify(task, null, 2)}\n` };
}

/** schema; endpoints waits on schema; docs waits on schema and review; review. */
const BOARD = {
  ...taskFile("task_0000000a", "schema"),
  ...taskFile("task_0000000b", "endpoints", { blockedBy: ["task_0000000a"] }),
  ...taskFile("task_0000000c", "docs", { blockedBy: ["task_0000000a", "task_0000000d"] }),
  ...taskFile("task_0000000d", "review"),
};

/** One delete_task call on `files`, then a final answer; the result and the workspace. */
async function remove(taskId: string, files: Record<string, string> = BOARD) {
  const run = await runExercise({
    files,
    prompts: ["delete it"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("delete_task", { task_id: taskId })) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  const file = (id: string) => path.join(run.workdir, ".harness", "tasks", `${id}.json`);
  return {
    content: String(result.content),
    isError: result.is_error === true,
    exists: (id: string) => existsSync(file(id)),
    read: (id: string) => readFileSync(file(id), "utf8"),
    run,
  };
}

it("offers the model delete_task, which takes a task_id", async () => {
  const { run } = await remove("task_0000000d");
  expect(toolNames(run.requests[0]!)).toContain("delete_task");
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "delete_task")!;
  expect(Object.keys(tool.input_schema.properties)).toEqual(["task_id"]);
  expect(tool.input_schema.required).toEqual(["task_id"]);
});

it("deletes a task: its file is gone, the answer names it, the others are untouched", async () => {
  const { content, isError, exists, read } = await remove("task_0000000b");
  expect({ content, isError }).toEqual({
    content: "Deleted task_0000000b (endpoints)",
    isError: false,
  });
  expect(exists("task_0000000b")).toBe(false);
  for (const id of ["task_0000000a", "task_0000000c", "task_0000000d"]) {
    expect(read(id)).toBe(BOARD[`.harness/tasks/${id}.json`]);
  }
});

it("removes the deleted task from every blockedBy, and says what that unblocked", async () => {
  const { content, exists, read } = await remove("task_0000000a");
  expect(content).toBe("Deleted task_0000000a (schema)\nUnblocked: endpoints");
  expect(exists("task_0000000a")).toBe(false);
  expect(JSON.parse(read("task_0000000b")).blockedBy).toEqual([]);
  expect(JSON.parse(read("task_0000000c")).blockedBy).toEqual(["task_0000000d"]);
});

it("refuses a task that is in progress, and changes nothing", async () => {
  const files = {
    ...BOARD,
    ...taskFile("task_0000000a", "schema", { status: "in_progress", owner: "agent" }),
  };
  const { content, isError, read } = await remove("task_0000000a", files);
  expect({ content, isError }).toEqual({
    content: "Error: Task task_0000000a is in_progress, cannot delete",
    isError: true,
  });
  for (const id of ["task_0000000a", "task_0000000b", "task_0000000c", "task_0000000d"]) {
    expect(read(id)).toBe(files[`.harness/tasks/${id}.json`]);
  }
});

it("reports a task that does not exist", async () => {
  const { content, isError } = await remove("task_000000ff");
  expect({ content, isError }).toEqual({
    content: "Error: Task not found: task_000000ff",
    isError: true,
  });
});
