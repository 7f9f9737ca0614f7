/**
 * s01.2: a timeout the model asks for, per bash call. Run it with
 * `pnpm course exercise check s01.2`.
 */
import { existsSync } from "node:fs";
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

/** One bash call with `input`, then a final answer; the result the model got back. */
async function bash(
  input: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<{ run: RunOutcome; content: string; isError: boolean }> {
  const run = await runExercise({
    env,
    prompts: ["run it"],
    steps: [
      { when: (r) => !afterTools(r), reply: reply(toolUse("bash", input)) },
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
  const result = lastToolResults(run.requests[1]!)[0]!;
  return { run, content: String(result.content), isError: result.is_error === true };
}

type Schema = {
  properties: Record<string, { type?: string; minimum?: number; maximum?: number }>;
  required?: string[];
};

/** bash's input schema, as the model was offered it. */
function bashSchema(run: RunOutcome): Schema {
  const tools = run.requests[0]!.tools as Array<{ name: string; input_schema: Schema }>;
  return tools.find((tool) => tool.name === "bash")!.input_schema;
}

it("offers bash a timeout in milliseconds, from 1 to 600000, that is not required", async () => {
  const { run } = await bash({ command: "echo hi" });
  const schema = bashSchema(run);
  expect(schema.properties.timeout).toMatchObject({ type: "integer", minimum: 1, maximum: 600000 });
  expect(schema.required).toEqual(["command"]);
});

it("gives a command the time its call asks for", async () => {
  const result = await bash(
    { command: "sleep 2; echo slept", timeout: 5000 },
    { BASH_TIMEOUT_MS: "1000" },
  );
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "slept",
    isError: false,
  });
});

it("stops a command at its call's timeout, and names that timeout", async () => {
  const started = Date.now();
  const result = await bash({ command: "sleep 5; echo late", timeout: 1000 });
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "Error: Timeout (1s)",
    isError: true,
  });
  expect(Date.now() - started).toBeLessThan(4000);
});

it("keeps BASH_TIMEOUT_MS for a call that asks for no timeout", async () => {
  const result = await bash({ command: "sleep 3; echo late" }, { BASH_TIMEOUT_MS: "1000" });
  expect(result.content).toBe("Error: Timeout (1s)");
});

it("caps the timeout at BASH_MAX_TIMEOUT_MS: the schema says so, and a longer one never runs", async () => {
  const result = await bash(
    { command: "echo ran > ran.txt", timeout: 6000 },
    { BASH_MAX_TIMEOUT_MS: "5000" },
  );
  expect(bashSchema(result.run).properties.timeout?.maximum).toBe(5000);
  expect({ content: result.content, isError: result.isError }).toEqual({
    content: "Error: Invalid input for bash: timeout must be an integer between 1 and 5000",
    isError: true,
  });
  expect(existsSync(path.join(result.run.workdir, "ran.txt"))).toBe(false);
});

it("refuses to start with a BASH_MAX_TIMEOUT_MS that is not a positive integer", async () => {
  const run = await runExercise({
    env: { BASH_MAX_TIMEOUT_MS: "soon" },
    prompts: ["run it"],
    steps: [{ when: () => true, reply: reply(text("done")) }],
  });
  expect(run.code).toBe(1);
  expect(run.output).toContain(
    "s01: configuration error: BASH_MAX_TIMEOUT_MS must be a positive integer (got 'soon')",
  );
  expect(run.requests.length).toBe(0);
});
