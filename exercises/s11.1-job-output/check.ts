/**
 * s11.1: reading a background job's output, whole or filtered. Run it with
 * `pnpm course exercise check s11.1`.
 */
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

/** `seq 1 300`: 1091 characters, far more than a notification's 500. */
const SEQ = Array.from({ length: 300 }, (_, i) => String(i + 1)).join("\n");

/**
 * Starts `command` as background job bg_0001, then (after `waitFirst`, a foreground sleep,
 * when given) makes the `reads` calls in one reply; what each read got back.
 */
async function readJob(
  command: string,
  reads: Array<Record<string, unknown>>,
  waitFirst = true,
): Promise<Array<{ content: string; isError: boolean }>> {
  const calls = reads.map((input) => toolUse("job_output", input));
  const run = await runExercise({
    prompts: ["start it, then read it"],
    steps: [
      {
        when: (r) => !afterTools(r),
        reply: reply(toolUse("bash", { command, run_in_background: true })),
      },
      {
        when: afterTools,
        reply: reply(...(waitFirst ? [toolUse("bash", { command: "sleep 1" })] : []), ...calls),
      },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const results = lastToolResults(run.requests[2]!).slice(waitFirst ? 1 : 0);
  return results.map((r) => ({ content: String(r.content), isError: r.is_error === true }));
}

it("offers the model job_output, which takes a task_id and an optional filter", async () => {
  const run = await runExercise({
    prompts: ["hi"],
    steps: [{ when: () => true, reply: reply(text("hello")) }],
  });
  expect(toolNames(run.requests[0]!)).toContain("job_output");
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "job_output")!;
  expect(Object.keys(tool.input_schema.properties).sort()).toEqual(["filter", "task_id"]);
  expect(tool.input_schema.required).toEqual(["task_id"]);
});

it("gives an ended job's whole output, past the notification's 500 characters", async () => {
  const [result] = await readJob("seq 1 300", [{ task_id: "bg_0001" }]);
  expect(result).toEqual({ content: `bg_0001 completed\n${SEQ}`, isError: false });
});

it("keeps only the lines that match the filter, and says so when none does", async () => {
  const [some, none] = await readJob("seq 1 300", [
    { task_id: "bg_0001", filter: "^2.5$" },
    { task_id: "bg_0001", filter: "^999$" },
  ]);
  const matching = ["205", "215", "225", "235", "245", "255", "265", "275", "285", "295"];
  expect(some).toEqual({ content: `bg_0001 completed\n${matching.join("\n")}`, isError: false });
  expect(none).toEqual({ content: "bg_0001 completed\n(no line matches ^999$)", isError: false });
});

it("says that a job still running has no output yet", async () => {
  const [result] = await readJob("sleep 5", [{ task_id: "bg_0001" }], false);
  expect(result).toEqual({
    content: "bg_0001 is still running; its output arrives when it ends",
    isError: false,
  });
});

it("refuses an unknown job and a filter that is not a regular expression", async () => {
  const [unknown, bad] = await readJob("echo hi", [
    { task_id: "bg_0009" },
    { task_id: "bg_0001", filter: "(" },
  ]);
  expect(unknown).toEqual({ content: "Error: No background job with ID bg_0009", isError: true });
  expect(bad!.isError).toBe(true);
  expect(bad!.content).toMatch(/^Error: Invalid regular expression/);
});
