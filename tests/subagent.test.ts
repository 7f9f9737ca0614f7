/**
 * Subagents, against every chapter from s06: the child's fresh context and
 * tools, what the parent gets back, the turn cap, failures, and the shared permission and
 * hook pipeline.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { apiError, reply, type ScriptStep, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as SubagentModule from "../chapters/s06-subagent/src/subagent.ts";
import {
  BASE_TOOLS,
  carried,
  casesFor,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
} from "./chapters.ts";
import {
  everyAttempt,
  interruptDuringSleep,
  lastToolResults,
  runChapter,
  SLEEP_30,
  sessionLog,
  toolNames,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
const isChild = (request: Request) => !toolNames(request).includes("task");
const isParent = (request: Request) => !isChild(request);
const parentAfterTools = (request: Request) =>
  isParent(request) && lastToolResults(request).length > 0;
const childAfterTools = (request: Request) =>
  isChild(request) && lastToolResults(request).length > 0;

/** The parent asks for one task, then answers with what came back. */
function delegate(prompt: string, child: ScriptStep[]): ScriptStep[] {
  return [
    {
      when: (r) => isParent(r) && r.messages.length === 1,
      reply: reply(toolUse("task", { prompt }, "toolu_task")),
    },
    ...child,
    { when: parentAfterTools, reply: reply(text("parent done")) },
  ];
}

// Edge cases (and every parameter case) run where these modules differ and on the newest
// chapter; the rest of the suite runs on every chapter (runsEdgeCases in chapters.ts).
const SUBAGENT = moduleVersions("s06", ["subagent.ts", "hooks.ts", "command-hooks.ts"]);

// Each test runs its own chapter, workspace and server, so they wait side by side; Ctrl-C
// kills every child of the process, so that test runs on its own, below.
describe.concurrent.each(carried(chaptersFrom("s06"), SUBAGENT))("$id subagent", (chapter) => {
  let sub: typeof SubagentModule;
  beforeAll(async () => {
    sub = await importChapter<typeof SubagentModule>(chapter, "subagent.ts");
  });
  const edge = edgeCase(chapter, SUBAGENT);

  it("runs the child from one user message with the base tools; the parent gets only its final text", async () => {
    const run = await runChapter(chapter, {
      prompts: ["find it"],
      files: { "notes.txt": "the secret word is marmalade" },
      steps: delegate("Read notes.txt and tell me the secret word.", [
        {
          when: (r) => isChild(r) && r.messages.length === 1,
          reply: reply(toolUse("read_file", { path: "notes.txt" })),
        },
        { when: childAfterTools, reply: reply(text("The word is marmalade.")) },
      ]),
    });
    const [parent1, child1, child2, parent2] = run.requests as [Request, Request, Request, Request];
    expect(run.requests).toHaveLength(4);
    expect(toolNames(parent1).slice(0, 7)).toEqual([...BASE_TOOLS, "todo_write", "task"]);
    for (const child of [child1, child2]) {
      expect(toolNames(child)).toEqual(BASE_TOOLS);
      expect(child.system).toContain("Subagent: another agent gave you one self-contained task.");
      expect(child.system).not.toContain("Delegation:");
      expect(child.system).not.toContain("Planning:");
    }
    expect(child1.messages).toEqual([
      { role: "user", content: "Read notes.txt and tell me the secret word." },
    ]);
    // The parent's history grows by exactly the call and one result holding the final text.
    expect(parent2.messages.slice(0, 1)).toEqual(parent1.messages);
    expect(parent2.messages).toHaveLength(3);
    expect(parent2.messages[2]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_task", content: "The word is marmalade." },
      ],
    });
    expect(JSON.stringify(parent2)).not.toContain('marmalade"'); // the file's text never reaches the parent
    expect(run.output).toMatch(
      /\[Subagent started\][\s\S]* {2}\[sub\] > read_file[\s\S]*\[Subagent done\]/,
    );
    expect(run.output).toMatch(/\[usage\] .*\(4 calls; sub: 2\)/);
    const log = sessionLog(run.workdir).api;
    expect(log).toContain('"kind":"config","scope":"sub"');
    expect(log.match(/"kind":"request","scope":"sub"/g)).toHaveLength(2);
  });

  edge("answers with one child call when the child replies in text right away", async () => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: delegate("Say hi.", [{ when: isChild, reply: reply(text("hi from the child")) }]),
    });
    expect(run.requests.filter(isChild)).toHaveLength(1);
    expect(lastToolResults(run.requests.at(-1)!)[0]?.content).toBe("hi from the child");
  });

  edge("says (no summary) when the child's last reply has no text", async () => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: delegate("Be quiet.", [
        { when: isChild, reply: reply({ type: "thinking", thinking: "..." }) },
      ]),
    });
    expect(lastToolResults(run.requests.at(-1)!)[0]).toEqual({
      type: "tool_result",
      tool_use_id: "toolu_task",
      content: "(no summary)",
    });
  });

  // The cap is one module's constant: its many model calls run with the edge cases.
  edge("stops a child after 30 model calls with a clear message", async () => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: delegate(
        "Loop forever.",
        Array.from({ length: 31 }, () => ({
          when: isChild,
          reply: reply(toolUse("bash", { command: "true" })),
        })),
      ),
    });
    expect(run.requests.filter(isChild)).toHaveLength(sub.MAX_SUB_TURNS);
    expect(lastToolResults(run.requests.at(-1)!)[0]).toMatchObject({
      content: "Subagent stopped after 30 turns without a final answer.",
      is_error: true,
    });
    expect(run.output).toContain("[Subagent stopped]");
  });

  it.each(
    casesFor(
      chapter,
      [
        [{ prompt: "   " }, "Error: task prompt must be a non-empty string"],
        [{ prompt: "" }, "Error: Invalid input for task: prompt must not be empty"],
        [{}, "Error: Invalid input for task: prompt is required"],
        [{ prompt: 7 }, "Error: Invalid input for task: prompt must be a string"],
      ] as Array<[Record<string, unknown>, string]>,
      SUBAGENT,
    ),
  )("refuses %j without starting a child", async (input, message) => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: [
        { when: (r) => r.messages.length === 1, reply: reply(toolUse("task", input)) },
        { when: parentAfterTools, reply: reply(text("ok")) },
      ],
    });
    expect(run.requests.filter(isChild)).toHaveLength(0);
    expect(lastToolResults(run.requests[1]!)[0]).toMatchObject({
      content: message,
      is_error: true,
    });
  });

  edge("turns a child's API failure into an error result; the parent goes on", async () => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: delegate("Fail.", [
        ...everyAttempt(chapter, apiError(500, "api_error", "child exploded")).map((fault) => ({
          when: isChild,
          reply: fault,
        })),
      ]),
    });
    expect(lastToolResults(run.requests.at(-1)!)[0]).toMatchObject({
      content: "Error: subagent failed: API error 500 api_error: child exploded",
      is_error: true,
    });
    expect(run.output).toContain("parent done");
  });

  it("sends the child's calls through the same permission and hook pipeline, marked [sub]", async () => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: delegate("Try sudo.", [
        {
          when: (r) => isChild(r) && r.messages.length === 1,
          reply: reply(toolUse("bash", { command: "sudo ls" })),
        },
        { when: childAfterTools, reply: reply(text("sudo was refused")) },
      ]),
    });
    const child = run.requests.filter(isChild);
    expect(lastToolResults(child[1]!)[0]?.content).toBe(
      "Permission denied by the deny list: 'sudo' is never allowed.",
    );
    expect(run.output).toContain("  [sub] [blocked] Permission denied by the deny list: 'sudo'");
    // The sample Stop hook ran for the child too (its note goes to the session log).
    expect(sessionLog(run.workdir).api).toMatch(
      /"kind":"hook","scope":"sub","data":\{"event":"Stop","hook":"summaryHook","outcome":"note"/,
    );
  });

  edge("fires SubagentStop command hooks for the child and Stop for the parent", async () => {
    const run = await runChapter(chapter, {
      prompts: ["go"],
      files: {
        ".claude/settings.json": JSON.stringify({
          hooks: {
            Stop: [
              {
                hooks: [
                  { type: "command", command: 'echo stop >> "$CLAUDE_PROJECT_DIR/events.txt"' },
                ],
              },
            ],
            SubagentStop: [
              {
                hooks: [
                  { type: "command", command: 'echo subagent >> "$CLAUDE_PROJECT_DIR/events.txt"' },
                ],
              },
            ],
          },
        }),
      },
      steps: delegate("Hi.", [{ when: isChild, reply: reply(text("child hi")) }]),
    });
    expect(readFileSync(path.join(run.workdir, "events.txt"), "utf8")).toBe("subagent\nstop\n");
  });

  it("runs several tasks of one reply one after another, and gives the child no reminder", async () => {
    const childRounds = Array.from({ length: 3 }, (_, i) => ({
      when: (r: Request) => isChild(r) && JSON.stringify(r.messages[0]).includes("first"),
      reply: reply(toolUse("bash", { command: `echo ${i}` })),
    }));
    const run = await runChapter(chapter, {
      prompts: ["go"],
      steps: [
        {
          when: (r) => isParent(r) && r.messages.length === 1,
          reply: reply(
            toolUse("task", { prompt: "first job" }, "toolu_a"),
            toolUse("task", { prompt: "second job" }, "toolu_b"),
          ),
        },
        ...childRounds,
        {
          when: (r) => isChild(r) && JSON.stringify(r.messages[0]).includes("first"),
          reply: reply(text("first result")),
        },
        {
          when: (r) => isChild(r) && JSON.stringify(r.messages[0]).includes("second"),
          reply: reply(text("second result")),
        },
        { when: parentAfterTools, reply: reply(text("both done")) },
      ],
    });
    expect(lastToolResults(run.requests.at(-1)!).map((r) => [r.tool_use_id, r.content])).toEqual([
      ["toolu_a", "first result"],
      ["toolu_b", "second result"],
    ]);
    const markers = run.output.match(/\[Subagent (started|done)\]/g);
    expect(markers).toEqual([
      "[Subagent started]",
      "[Subagent done]",
      "[Subagent started]",
      "[Subagent done]",
    ]);
    expect(JSON.stringify(run.requests.filter(isChild))).not.toContain("<reminder>");
  });
});

describe.each(carried(chaptersFrom("s06"), SUBAGENT))("$id subagent and Ctrl-C", (chapter) => {
  it("on Ctrl-C during a task kills the child's command and ends the turn: the child makes no more model calls", async () => {
    const { run, sleepEnded } = await interruptDuringSleep(chapter, {
      prompts: ["delegate", "after the interrupt"],
      steps: delegate("Wait a while.", [
        {
          when: (r) => isChild(r) && r.messages.length === 1,
          reply: reply(toolUse("bash", { command: SLEEP_30 })),
        },
        { when: childAfterTools, reply: reply(text("the child went on")) },
      ]),
    });
    expect(sleepEnded, "the child's sleep still runs").toBe(true);
    const ends = chaptersFrom("s06", "Ctrl-C during a turn ends the session").includes(chapter);
    // The parent's first call and the child's: the child makes none after the interrupt.
    // From s15 the session goes on, and the next line is the parent's third request.
    expect(run.received).toHaveLength(ends ? 2 : 3);
    expect(run.requests.filter(isChild)).toHaveLength(1);
    expect(run.code).toBe(0);
    expect(run.output).toContain(ends ? "Interrupted." : "[interrupted]");
    if (ends) expect(run.output).not.toContain("parent done");
    else {
      // The interrupted task answers nothing; the parent's next line is a turn of its own.
      expect(run.output.indexOf("parent done")).toBeGreaterThan(
        run.output.indexOf("[interrupted]"),
      );
      expect(lastToolResults(run.requests[2]!)).toEqual([
        expect.objectContaining({ content: "Interrupted by the user", is_error: true }),
      ]);
    }
  });
});
