/**
 * s05.2: the reminder shows the list, and leaves a finished one alone. Run it with
 * `pnpm course exercise check s05.2`.
 */
import { expect, it, reply, runExercise, text, toolUse } from "../../tests/helpers/exercise.ts";

/** One model step: a todo_write, a bash command, or the final answer. */
type Move = { todos: unknown[] } | { bash: string } | { say: string };

/** The typed lines, each with its moves in order (one reply each). */
function session(lines: Array<[string, Move[]]>) {
  const steps = lines.flatMap(([, moves]) =>
    moves.map((move) => ({
      when: () => true,
      reply:
        "todos" in move
          ? reply(toolUse("todo_write", { todos: move.todos }))
          : "bash" in move
            ? reply(toolUse("bash", { command: move.bash }))
            : reply(text(move.say)),
    })),
  );
  return runExercise({ prompts: lines.map(([line]) => line), steps });
}

/** The text blocks after the tool results of every request, in order. */
function reminders(requests: Array<{ messages: Array<{ content: unknown }> }>): string[] {
  return requests.flatMap((request) => {
    const content = request.messages.at(-1)!.content;
    if (!Array.isArray(content)) return [];
    return (content as Array<{ type: string; text?: string }>).flatMap((block) =>
      block.type === "text" ? [block.text ?? ""] : [],
    );
  });
}

const PLAN = [
  { content: "Write greet.mjs", status: "completed" },
  { content: "Write a test for it", status: "in_progress" },
  { content: "Run the test", status: "pending" },
];
const SHOWN =
  "<reminder>Update your todos. Your current list:\n" +
  "[x] Write greet.mjs\n[>] Write a test for it\n[ ] Run the test\n\n(1/3 completed)</reminder>";
const THREE_ROUNDS: Move[] = [{ bash: "echo 1" }, { bash: "echo 2" }, { bash: "echo 3" }];

it("puts the current list in the reminder after three rounds without an update", async () => {
  const run = await session([["work", [{ todos: PLAN }, ...THREE_ROUNDS, { say: "done" }]]]);
  expect(reminders(run.requests)).toEqual([SHOWN]);
  expect(reminders([run.requests[4]!])).toEqual([SHOWN]);
  expect(run.output).toContain("[todo] 3 tool rounds without a todo update: reminding the model");
});

it("shows the session's list, written while an earlier line was answered", async () => {
  const run = await session([
    ["plan", [{ todos: PLAN }, { say: "planned" }]],
    ["work", [...THREE_ROUNDS, { say: "done" }]],
  ]);
  expect(reminders(run.requests)).toEqual([SHOWN]);
});

it("keeps the short reminder when there is no list, never written or cleared", async () => {
  const never = await session([["work", [...THREE_ROUNDS, { say: "done" }]]]);
  expect(reminders(never.requests)).toEqual(["<reminder>Update your todos.</reminder>"]);
  const cleared = await session([
    ["work", [{ todos: PLAN }, { todos: [] }, ...THREE_ROUNDS, { say: "done" }]],
  ]);
  expect(reminders(cleared.requests)).toEqual(["<reminder>Update your todos.</reminder>"]);
});

it("does not remind while every item of the list is completed", async () => {
  const finished = PLAN.map((item) => ({ ...item, status: "completed" }));
  const run = await session([
    ["work", [{ todos: finished }, ...THREE_ROUNDS, ...THREE_ROUNDS, { say: "done" }]],
  ]);
  expect(reminders(run.requests)).toEqual([]);
  expect(run.output).not.toContain("reminding the model");
});
