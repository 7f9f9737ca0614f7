/**
 * s15.1: a spending cap for the session. Run it with `pnpm course exercise check s15.1`.
 */
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

/**
 * A reply whose usage is exactly 10 000 input tokens and nothing else: $0.03 at the
 * default model's price ($3 per million input tokens), whatever the request held.
 */
const costly = (...blocks: Parameters<typeof reply>) => ({
  ...reply(...blocks),
  usage: {
    input_tokens: 10_000,
    output_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  },
});

/** Three typed lines, each answered with one $0.03 reply. */
function threeLines(budget: string) {
  return runExercise({
    env: { MAX_BUDGET_USD: budget },
    prompts: ["first", "second", "third"],
    steps: ["first", "second", "third"].map((line) => ({
      when: lastMentions(line),
      reply: costly(text(`answer to ${line}`)),
    })),
  });
}

it("ends the session after the turn that takes its cost past MAX_BUDGET_USD", async () => {
  const run = await threeLines("0.05");
  expect(run.output).toContain("answer to second");
  expect(run.output).toContain(
    "[budget] the session has cost $0.0600, more than MAX_BUDGET_USD ($0.05): ending the session",
  );
  expect(run.requests).toHaveLength(2);
  expect(run.output).not.toContain("answer to third");
  expect(run.code).toBe(1);
});

it("counts every model call of the turn, tool rounds included", async () => {
  const run = await runExercise({
    env: { MAX_BUDGET_USD: "0.05" },
    files: { "notes.txt": "hello\n" },
    prompts: ["read notes.txt", "second"],
    steps: [
      {
        when: (r) => lastMentions("read notes.txt")(r) && !afterTools(r),
        reply: costly(toolUse("read_file", { path: "notes.txt" })),
      },
      { when: afterTools, reply: costly(text("It says hello.")) },
      { when: lastMentions("second"), reply: costly(text("answer to second")) },
    ],
  });
  expect(run.output).toContain("It says hello.");
  expect(run.output).toContain(
    "[budget] the session has cost $0.0600, more than MAX_BUDGET_USD ($0.05): ending the session",
  );
  expect(run.requests).toHaveLength(2);
  expect(run.code).toBe(1);
});

it("runs every line while the session stays within its budget", async () => {
  const run = await threeLines("1");
  expect(run.requests).toHaveLength(3);
  expect(run.output).toContain("answer to third");
  expect(run.output).not.toContain("[budget]");
  expect(run.code).toBe(0);
});

it("refuses a MAX_BUDGET_USD that is not a positive number, before any model call", async () => {
  for (const budget of ["lots", "0", "-1"]) {
    const run = await threeLines(budget);
    expect(run.output).toContain(
      `s15: configuration error: MAX_BUDGET_USD must be a positive number of dollars (got '${budget}')`,
    );
    expect(run.requests).toHaveLength(0);
    expect(run.code).toBe(1);
  }
});
