/**
 * Planning with todo_write, against every chapter from s05: the list's
 * checks and rendering, and the reminder after three silent tool rounds, placed after the
 * tool_result blocks of the same user message.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { checkInput, nullLog } from "shared";
import { reply, type ScriptStep, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as TodoModule from "../chapters/s05-todo/src/todo.ts";
import {
  BASE_TOOLS,
  carried,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
} from "./chapters.ts";
import { afterTools, lastToolResults, runChapter, sessionLog, userSaid } from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
const NEVER = new AbortController().signal;
const REMINDER = "<reminder>Update your todos.</reminder>";

/** The user messages of a request that carry the reminder. */
const withReminder = (request: Request) =>
  request.messages.filter(
    (m) =>
      Array.isArray(m.content) && m.content.some((b) => b.type === "text" && b.text === REMINDER),
  );

/** `rounds` replies calling `bash`, then a text answer. */
function silentRounds(rounds: number, prefix = "round"): ScriptStep[] {
  return [
    ...Array.from({ length: rounds }, (_, i) => ({
      reply: reply(toolUse("bash", { command: `echo ${prefix}-${i + 1}` })),
    })),
    { reply: reply(text(`${prefix} done`)) },
  ];
}

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(moduleVersions("s05", ["todo.ts"]).map((c) => c.id));
// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the rest of that block runs on every chapter (runsEdgeCases in chapters.ts).
const TODO = moduleVersions("s05", [
  "todo.ts",
  "permissions.ts",
  "permission-rules.ts",
  "settings.ts",
]);

describe.each(carried(chaptersFrom("s05"), MODULE_CHAPTERS, TODO))("$id todo", (chapter) => {
  let todo: typeof TodoModule;
  beforeAll(async () => {
    todo = await importChapter<typeof TodoModule>(chapter, "todo.ts");
  });
  const edge = edgeCase(chapter, TODO);

  if (MODULE_CHAPTERS.has(chapter.id)) {
    describe("the list, through the tool's schema check as the loop makes it", () => {
      /** One todo_write call as the loop makes it: the schema check, then run. */
      const write = async (todos: unknown, manager = new todo.TodoManager()) => {
        const tool = todo.todoWriteTool({ manager, emit: () => {}, log: nullLog() });
        const checked = checkInput(tool, { todos });
        const result = checked.ok
          ? await tool.run(checked.value, { workdir: "/", signal: NEVER, scope: "main" })
          : { content: checked.error, isError: true };
        return { result, manager };
      };

      it("renders markers and the completed count", async () => {
        const { result } = await write([
          { content: "a", status: "completed" },
          { content: "b", status: "in_progress" },
          { content: "c", status: "pending" },
        ]);
        expect(result).toEqual({ content: "[x] a\n[>] b\n[ ] c\n\n(1/3 completed)", quiet: true });
        expect(new todo.TodoManager().render()).toBe("No todos.");
      });

      it("accepts a JSON-string array and a missing status (pending), and trims content", async () => {
        const { manager } = await write(
          '[{"content": "  write it  "}, {"content": "x", "status": "completed"}]',
        );
        expect(manager.items).toEqual([
          { content: "write it", status: "pending" },
          { content: "x", status: "completed" },
        ]);
      });

      const invalid = "Error: Invalid input for todo_write: ";
      it.each([
        ["not json", `${invalid}todos must be an array`],
        ['{"content": "a"}', `${invalid}todos must be an array`],
        [{ content: "a" }, `${invalid}todos must be an array`],
        [42, `${invalid}todos must be an array`],
        [["x"], `${invalid}todos[0] must be an object`],
        [[{ content: "ok" }, { content: "   " }], "Error: todos[1] requires content"],
        [[{ content: "" }], `${invalid}todos[0].content must not be empty`],
        [[{ status: "pending" }], `${invalid}todos[0].content is required`],
        [
          [{ content: "a", status: "done" }],
          `${invalid}todos[0].status must be one of pending, in_progress, completed`,
        ],
        [
          [{ content: "a", status: "PENDING" }],
          `${invalid}todos[0].status must be one of pending, in_progress, completed`,
        ],
        [
          [
            { content: "a", status: "in_progress" },
            { content: "b", status: "in_progress" },
          ],
          "Error: Only one todo can be in_progress at a time",
        ],
      ])("rejects %j with a clear message and keeps the old list", async (raw, message) => {
        const manager = new todo.TodoManager();
        manager.update([{ content: "keep me", status: "pending" }]);
        expect((await write(raw, manager)).result).toEqual({ content: message, isError: true });
        expect(manager.items).toEqual([{ content: "keep me", status: "pending" }]);
      });

      it("allows exactly 20 items and checks the count before the items", async () => {
        const items = (n: number) => Array.from({ length: n }, (_, i) => ({ content: `t${i}` }));
        const twenty = await write(items(20));
        expect(twenty.result).toMatchObject({ quiet: true });
        expect(twenty.manager.render()).toMatch(/\(0\/20 completed\)$/);
        expect((await write([...items(20), "not even an object"])).result).toEqual({
          content: `${invalid}todos must have at most 20 items`,
          isError: true,
        });
      });

      it("replaces the whole list, and [] clears it", async () => {
        const { manager } = await write([{ content: "a", extra: 1 }]);
        await write([{ content: "b", status: "completed" }], manager);
        expect(manager.items).toEqual([{ content: "b", status: "completed" }]);
        expect((await write([], manager)).result).toEqual({ content: "No todos.", quiet: true });
      });
    });
  }

  // Each test runs its own chapter, workspace and server: they wait side by side.
  describe.concurrent("through the chapter", () => {
    it("offers todo_write after the base tools, returns the rendered list and shows the panel", async () => {
      const run = await runChapter(chapter, {
        prompts: ["plan"],
        steps: [
          {
            reply: reply(
              toolUse("todo_write", {
                todos: [
                  { content: "Read the code", status: "in_progress" },
                  { content: "Fix it", status: "pending" },
                ],
              }),
            ),
          },
          { when: afterTools, reply: reply(text("planned")) },
        ],
      });
      const names = (run.requests[0]!.tools as Anthropic.Tool[]).map((t) => t.name);
      expect(names.slice(0, 6)).toEqual([...BASE_TOOLS, "todo_write"]);
      const rendered = "[>] Read the code\n[ ] Fix it\n\n(0/2 completed)";
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(rendered);
      expect(run.output).toContain(`## Current Tasks\n${rendered}`);
      expect(run.requests[0]!.system).toContain(
        "Planning: before a multi-step task, write your steps with todo_write",
      );
      expect(sessionLog(run.workdir).transcript).toContain("=== TASKS");
    });

    it("attaches the reminder after three silent rounds, after the tool results, once", async () => {
      const run = await runChapter(chapter, { prompts: ["work"], steps: silentRounds(3) });
      expect(run.requests).toHaveLength(4);
      const last = run.requests[3]!;
      const carrying = withReminder(last);
      expect(carrying).toHaveLength(1);
      const blocks = carrying[0]!.content as Anthropic.ContentBlockParam[];
      expect(blocks.map((b) => b.type)).toEqual(["tool_result", "text"]);
      expect(last.messages.at(-1)).toBe(carrying[0]);
      // Roles still alternate: the reminder is not a message of its own.
      const roles = last.messages.map((m) => m.role);
      expect(roles.every((role, i) => i === 0 || role !== roles[i - 1])).toBe(true);
      expect(run.output).toContain("[todo] 3 tool rounds without a todo update");
    });

    edge("reminds on rounds 3 and 6 of six silent rounds", async () => {
      const run = await runChapter(chapter, { prompts: ["work"], steps: silentRounds(6) });
      expect(run.requests.map((r) => withReminder(r).length)).toEqual([0, 0, 0, 1, 1, 1, 2]);
    });

    it("starts counting again on every typed line", async () => {
      const run = await runChapter(chapter, {
        prompts: ["first", "second"],
        steps: [
          { when: userSaid("first"), reply: reply(toolUse("bash", { command: "echo 1" })) },
          {
            when: (r) => lastToolResults(r)[0]?.content === "1",
            reply: reply(toolUse("bash", { command: "echo 2" })),
          },
          { when: (r) => lastToolResults(r)[0]?.content === "2", reply: reply(text("one done")) },
          { when: userSaid("second"), reply: reply(toolUse("bash", { command: "echo 3" })) },
          {
            when: (r) => lastToolResults(r)[0]?.content === "3",
            reply: reply(toolUse("bash", { command: "echo 4" })),
          },
          { when: (r) => lastToolResults(r)[0]?.content === "4", reply: reply(text("two done")) },
        ],
      });
      expect(run.requests).toHaveLength(6);
      expect(run.requests.every((r) => withReminder(r).length === 0)).toBe(true);
    });

    edge(
      "resets when todo_write runs, even with an error, but not when its input is refused or a deny rule blocks it",
      async () => {
        const todoCall = (todos: unknown) => ({ reply: reply(toolUse("todo_write", { todos })) });
        const bash = { reply: reply(toolUse("bash", { command: "echo x" })) };
        const two = [
          { content: "a", status: "in_progress" },
          { content: "b", status: "in_progress" },
        ];
        const ran = await runChapter(chapter, {
          prompts: ["go"],
          steps: [bash, bash, todoCall(two), bash, { reply: reply(text("end")) }],
        });
        expect(ran.requests.every((r) => withReminder(r).length === 0)).toBe(true);
        expect(lastToolResults(ran.requests[3]!)[0]?.content).toBe(
          "Error: Only one todo can be in_progress at a time",
        );

        const refused = await runChapter(chapter, {
          prompts: ["go"],
          steps: [bash, bash, todoCall("not json"), bash, { reply: reply(text("end")) }],
        });
        expect(lastToolResults(refused.requests[3]!)[0]?.content).toBe(
          "Error: Invalid input for todo_write: todos must be an array",
        );
        expect(withReminder(refused.requests[3]!)).toHaveLength(1);

        const blocked = await runChapter(chapter, {
          prompts: ["go"],
          files: {
            ".claude/settings.json": JSON.stringify({ permissions: { deny: ["TodoWrite"] } }),
          },
          steps: [bash, bash, todoCall([{ content: "a" }]), bash, { reply: reply(text("end")) }],
        });
        expect(lastToolResults(blocked.requests[3]!)[0]?.content).toMatch(
          /^Permission denied by deny rule TodoWrite/,
        );
        expect(withReminder(blocked.requests[3]!)).toHaveLength(1);
      },
    );
  });
});
