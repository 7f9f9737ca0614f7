/**
 * s15.2: the retry count from CLAUDE_CODE_MAX_RETRIES. Run it with
 * `pnpm course exercise check s15.2`.
 */
import { apiError, expect, it, reply, runExercise, text } from "../../tests/helpers/exercise.ts";

/** A failure the retry layer retries, to be retried at once (`retry-after-ms: 1`). */
const unavailable = () =>
  apiError(503, "api_error", "Unavailable", { headers: { "retry-after-ms": "1" } });
const overloaded = () =>
  apiError(529, "overloaded_error", "Overloaded", { headers: { "retry-after-ms": "1" } });

/** One typed line whose model call fails `failures` times, then is answered. */
function session(env: Record<string, string>, failures: Array<ReturnType<typeof apiError>>) {
  return runExercise({
    env,
    prompts: ["hello"],
    steps: [...failures, reply(text("Hello back."))].map((answer) => ({
      when: () => true,
      reply: answer,
    })),
  });
}

const DISCARDED = "(this turn was discarded; the conversation is as before it)";

it("retries as many times as CLAUDE_CODE_MAX_RETRIES says", async () => {
  const run = await session({ CLAUDE_CODE_MAX_RETRIES: "5" }, Array(5).fill(unavailable()));
  expect(run.output).toContain("[retry] server error (503); attempt 2 of 6 in 0.0 s");
  expect(run.output).toContain("[retry] server error (503); attempt 6 of 6 in 0.0 s");
  expect(run.output).toContain("Hello back.");
  expect(run.received).toHaveLength(6);
});

it("gives up once that many retries have failed", async () => {
  const run = await session({ CLAUDE_CODE_MAX_RETRIES: "1" }, [unavailable(), unavailable()]);
  expect(run.output).toContain("[retry] server error (503); attempt 2 of 2 in 0.0 s");
  expect(run.output).toContain(DISCARDED);
  expect(run.output).not.toContain("Hello back.");
  expect(run.received).toHaveLength(2);
});

it("does not retry at all with CLAUDE_CODE_MAX_RETRIES=0", async () => {
  const run = await session({ CLAUDE_CODE_MAX_RETRIES: "0" }, [overloaded()]);
  expect(run.output).not.toContain("[retry]");
  expect(run.output).toContain(DISCARDED);
  expect(run.received).toHaveLength(1);
});

it("keeps three retries when the variable is not set", async () => {
  const run = await session({}, Array(4).fill(unavailable()));
  expect(run.output).toContain("[retry] server error (503); attempt 4 of 4 in 0.0 s");
  expect(run.output).toContain(DISCARDED);
  expect(run.received).toHaveLength(4);
});

it("refuses a CLAUDE_CODE_MAX_RETRIES that is not an integer of 0 or more, before any model call", async () => {
  for (const value of ["many", "-1", "2.5"]) {
    const run = await session({ CLAUDE_CODE_MAX_RETRIES: value }, []);
    expect(run.output).toContain(
      `s15: configuration error: CLAUDE_CODE_MAX_RETRIES must be an integer of 0 or more (got '${value}')`,
    );
    expect(run.received).toHaveLength(0);
    expect(run.code).toBe(1);
  }
});
