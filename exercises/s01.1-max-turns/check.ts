/**
 * s01.1: a cap on the model calls of one turn. Run it with `pnpm course exercise check s01.1`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastMentions,
  reply,
  runExercise,
  text,
  toolUse,
} from "../../tests/helpers/exercise.ts";

const STOPPED =
  "Stopped: this turn reached MAX_TURNS (2) before a final answer; type a line to go on.";

/** A model that asks for three rounds of bash (each writes a file), then answers. */
const THREE_ROUNDS = [
  { when: lastMentions("start"), reply: reply(toolUse("bash", { command: "echo 1 > one.txt" })) },
  { when: afterTools, reply: reply(toolUse("bash", { command: "echo 2 > two.txt" })) },
  { when: afterTools, reply: reply(toolUse("bash", { command: "echo 3 > three.txt" })) },
  { when: afterTools, reply: reply(text("all three written")) },
];

/** The printed lines that say a turn stopped. */
const stoppedLines = (output: string) =>
  output.split("\n").filter((line) => line.startsWith("Stopped"));

const written = (workdir: string) =>
  ["one.txt", "two.txt", "three.txt"].filter((name) => existsSync(path.join(workdir, name)));

it("stops a turn after MAX_TURNS model calls, once the last call's tools have run", async () => {
  const run = await runExercise({
    env: { MAX_TURNS: "2" },
    prompts: ["start"],
    steps: THREE_ROUNDS,
  });
  expect(run.requests.length).toBe(2);
  expect(written(run.workdir)).toEqual(["one.txt", "two.txt"]);
  expect(run.code).toBe(0);
});

it("says in one line that the turn stopped at the cap, and no answer follows", async () => {
  const run = await runExercise({
    env: { MAX_TURNS: "2" },
    prompts: ["start"],
    steps: THREE_ROUNDS,
  });
  expect(stoppedLines(run.output)).toEqual([STOPPED]);
  expect(run.output).not.toContain("all three written");
});

it("carries on at the next line with the history kept and a fresh count", async () => {
  const run = await runExercise({
    env: { MAX_TURNS: "2" },
    prompts: ["start", "carry on"],
    steps: [
      THREE_ROUNDS[0]!,
      THREE_ROUNDS[1]!,
      {
        when: lastMentions("carry on"),
        reply: reply(toolUse("bash", { command: "echo 3 > three.txt" })),
      },
      { when: afterTools, reply: reply(text("all three written")) },
    ],
  });
  expect(run.requests.length).toBe(4);
  // The second turn's first request: the whole first turn, its last results, the new line.
  const messages = run.requests[2]!.messages;
  expect(messages.map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
    "user",
  ]);
  expect(JSON.stringify(messages[4])).toContain("tool_result");
  expect(messages[5]).toEqual({ role: "user", content: "carry on" });
  expect(written(run.workdir)).toEqual(["one.txt", "two.txt", "three.txt"]);
  expect(run.output).toContain("all three written");
  expect(stoppedLines(run.output)).toEqual([STOPPED]);
});

it("leaves a turn that ends within the cap as it was", async () => {
  const run = await runExercise({
    env: { MAX_TURNS: "2" },
    prompts: ["start"],
    steps: [THREE_ROUNDS[0]!, { when: afterTools, reply: reply(text("one written")) }],
  });
  expect(run.requests.length).toBe(2);
  expect(run.output).toContain("one written");
  expect(stoppedLines(run.output)).toEqual([]);
});

it("refuses to start with a MAX_TURNS that is not a positive integer", async () => {
  for (const value of ["abc", "0"]) {
    const run = await runExercise({
      env: { MAX_TURNS: value },
      prompts: ["start"],
      steps: THREE_ROUNDS,
    });
    expect(run.code).toBe(1);
    expect(run.output).toContain(
      `s01: configuration error: MAX_TURNS must be a positive integer (got '${value}')`,
    );
    expect(run.requests.length).toBe(0);
  }
});
