/**
 * s10.1: priority decides the list and the next claim. Run it with
 * `pnpm course exercise check s10.1`.
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

/** Four tasks: write docs (p3), fix login (p9, waits on write docs), tidy (p5), deploy (p9). */
const BOARD = {
  ...taskFile("task_0000000a", "write docs", { priority: 3 }),
  ...taskFile("task_0000000b", "fix login", { priority: 9, blockedBy: ["task_0000000a"] }),
  ...taskFile("task_0000000c", "tidy", { priority: 5 }),
  ...taskFile("task_0000000d", "deploy", { priority: 9 }),
};

/** One tool call on `files`, then a final answer; the result and the workspace. */
async function call(name: string, input: Record<string, unknown>, files: Record<string, string>) {
  const run = await runExercise({
    files,
    prompts: ["go"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse(name, input)) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  const read = (id: string) =>
    JSON.parse(readFileSync(path.join(run.workdir, ".harness", "tasks", `${id}.json`), "utf8"));
  return { content: String(result.content), isError: result.is_error === true, read, run };
}

it("lists tasks by priority, highest first, equal priorities in file-name order", async () => {
  const { content } = await call("list_tasks", {}, BOARD);
  expect(content).toBe(
    [
      "[ ] task_0000000b (p9): fix login [pending] (blockedBy: task_0000000a)",
      "[ ] task_0000000d (p9): deploy [pending]",
      "[ ] task_0000000c (p5): tidy [pending]",
      "[ ] task_0000000a (p3): write docs [pending]",
    ].join("\n"),
  );
});

it("shows the same order in /tasks", async () => {
  const run = await runExercise({ files: BOARD, prompts: ["/tasks"] });
  const order = ["task_0000000b (p9)", "task_0000000d (p9)", "task_0000000c (p5)"].map((line) =>
    run.output.indexOf(`[ ] ${line}`),
  );
  expect(order.every((at) => at >= 0)).toBe(true);
  expect([...order].sort((a, b) => a - b)).toEqual(order);
  expect(run.output.indexOf("[ ] task_0000000a (p3)")).toBeGreaterThan(order[2]!);
});

it("offers claim_task with task_id no longer required", async () => {
  const { run } = await call("list_tasks", {}, BOARD);
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "claim_task")!;
  expect(Object.keys(tool.input_schema.properties)).toEqual(["task_id"]);
  expect(tool.input_schema.required ?? []).not.toContain("task_id");
});

it("claims the highest-priority task that can start when no task_id is given", async () => {
  const { content, isError, read } = await call("claim_task", {}, BOARD);
  expect({ content, isError }).toEqual({
    content: "Claimed task_0000000d (deploy)",
    isError: false,
  });
  expect(read("task_0000000d")).toMatchObject({ status: "in_progress", owner: "agent" });
  expect(read("task_0000000b")).toMatchObject({ status: "pending", owner: null });
});

it("says so when no task can start, and changes nothing", async () => {
  const files = {
    ...taskFile("task_0000000a", "write docs", { status: "in_progress", owner: "agent" }),
    ...taskFile("task_0000000b", "fix login", { priority: 9, blockedBy: ["task_0000000a"] }),
    ...taskFile("task_0000000c", "tidy", { status: "completed", owner: "agent" }),
  };
  const { content, isError, run } = await call("claim_task", {}, files);
  expect({ content, isError }).toEqual({
    content: "Error: No pending task can be started now",
    isError: true,
  });
  for (const [name, text] of Object.entries(files)) {
    expect(readFileSync(path.join(run.workdir, name), "utf8")).toBe(text);
  }
});

it("still claims the task a task_id names, as before", async () => {
  const { content, read } = await call("claim_task", { task_id: "task_0000000c" }, BOARD);
  expect(content).toBe("Claimed task_0000000c (tidy)");
  expect(read("task_0000000c")).toMatchObject({ status: "in_progress", owner: "agent" });
});
