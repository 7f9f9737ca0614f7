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
import type * as AgentsModule from "../chapters/s06-subagent/src/agents.ts";
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
  baseTools,
  everyAttempt,
  interruptDuringSleep,
  lastToolResults,
  runChapter,
  SLEEP_30,
  sessionLog,
  tempWorkspace,
  toolNames,
  userSaid,
  writeFiles,
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

/** A definition as Claude Code's documentation writes one. */
const REVIEWER = [
  "---",
  "name: code-reviewer",
  "description: Reviews a change for bugs. Use after code changes.",
  "tools: Read, Glob, Grep",
  "---",
  "You are a careful code reviewer. Report at most three findings.",
  "",
].join("\n");

const asReviewer = (request: Request) =>
  isChild(request) && String(request.system).includes("You are a careful code reviewer.");

describe.concurrent.each(carried(chaptersFrom("s06"), SUBAGENT))(
  "$id agent definitions (.claude/agents)",
  (chapter) => {
    const edge = edgeCase(chapter, SUBAGENT);

    it("runs .claude/agents/code-reviewer.md as the child: its instructions, only its tools, unknown names reported once", async () => {
      const review = (id: string) =>
        reply(toolUse("task", { prompt: "Review app.js", subagent_type: "code-reviewer" }, id));
      const run = await runChapter(chapter, {
        prompts: ["review it", "again"],
        files: { ".claude/agents/code-reviewer.md": REVIEWER, "app.js": "let x = 1\n" },
        steps: [
          { when: (r) => isParent(r) && r.messages.length === 1, reply: review("toolu_a") },
          {
            when: (r) => asReviewer(r) && r.messages.length === 1,
            reply: reply(toolUse("read_file", { path: "app.js" })),
          },
          { when: asReviewer, reply: reply(text("One finding: no semicolon.")) },
          { when: parentAfterTools, reply: reply(text("reviewed")) },
          { when: (r) => isParent(r) && userSaid("again")(r), reply: review("toolu_b") },
          { when: asReviewer, reply: reply(text("Still one finding.")) },
          { when: parentAfterTools, reply: reply(text("reviewed again")) },
        ],
      });
      const children = run.requests.filter(isChild);
      expect(children).toHaveLength(3);
      for (const child of children) {
        // Claude Code's Read and Glob, as the course names them; Grep is not a tool here.
        expect(toolNames(child)).toEqual(["read_file", "glob"]);
        expect(child.system).toContain(
          "Agent code-reviewer (.claude/agents/code-reviewer.md):\nYou are a careful code reviewer.",
        );
        expect(child.system).not.toContain("name: code-reviewer");
      }
      expect(lastToolResults(children[1]!)[0]?.content).toBe("let x = 1");
      const parent = run.requests.find(isParent)!;
      const task = (parent.tools as Anthropic.Tool[]).find((tool) => tool.name === "task");
      expect(task?.description).toContain(
        "- code-reviewer: Reviews a change for bugs. Use after code changes.",
      );
      expect(run.output).toContain(
        "[agents] 1 agent(s): code-reviewer (.claude/agents/code-reviewer.md)",
      );
      expect(run.output).toContain("[Subagent started: code-reviewer]");
      const unknown =
        "[agents] .claude/agents/code-reviewer.md: tool 'Grep' is not a tool a subagent has here; left out";
      expect(run.output.split(unknown)).toHaveLength(2);
    });

    edge("refuses an unknown subagent_type, naming the ones there are", async () => {
      const run = await runChapter(chapter, {
        prompts: ["go"],
        files: { ".claude/agents/code-reviewer.md": REVIEWER },
        steps: [
          {
            when: (r) => r.messages.length === 1,
            reply: reply(toolUse("task", { prompt: "x", subagent_type: "tester" })),
          },
          { when: parentAfterTools, reply: reply(text("ok")) },
        ],
      });
      expect(run.requests.filter(isChild)).toHaveLength(0);
      expect(lastToolResults(run.requests[1]!)[0]).toMatchObject({
        content: "Error: Unknown subagent_type 'tester'. Available: general-purpose, code-reviewer",
        is_error: true,
      });
    });

    edge(
      "honours model (an id as written, an alias through its variable), the project's file winning over ~/.claude/agents",
      async () => {
        const home = tempWorkspace("home");
        writeFiles(home, {
          ".claude/agents/code-reviewer.md": REVIEWER.replace("careful", "user-level"),
          ".claude/agents/fast.md":
            "---\nname: fast\ndescription: Quick looks.\nmodel: haiku\n---\nBe quick.\n",
        });
        const run = await runChapter(chapter, {
          prompts: ["go", "/agents"],
          env: { HOME: home, ANTHROPIC_DEFAULT_HAIKU_MODEL: "claude-haiku-test" },
          files: {
            ".claude/agents/code-reviewer.md": REVIEWER.replace(
              "tools: Read, Glob, Grep",
              "model: claude-reviewer-test",
            ),
          },
          steps: [
            {
              when: (r) => r.messages.length === 1 && isParent(r),
              reply: reply(
                toolUse("task", { prompt: "a", subagent_type: "code-reviewer" }, "toolu_1"),
                toolUse("task", { prompt: "b", subagent_type: "fast" }, "toolu_2"),
              ),
            },
            { when: isChild, reply: reply(text("done")) },
            { when: parentAfterTools, reply: reply(text("ok")) },
          ],
        });
        const received = run.received.map((r) => r.body as Request);
        const [reviewer, fast] = received.filter(isChild);
        expect(reviewer?.model).toBe("claude-reviewer-test");
        expect(reviewer?.system).toContain("You are a careful code reviewer.");
        expect(toolNames(reviewer!)).toEqual(BASE_TOOLS);
        expect(fast?.model).toBe("claude-haiku-test");
        expect(run.output).toContain(
          "[agents] ~/.claude/agents/code-reviewer.md: agent 'code-reviewer' is also in .claude/agents/code-reviewer.md, which wins; skipped",
        );
        // /agents lists each definition with its file, tools and model.
        expect(run.output).toContain(
          "- fast: Quick looks.\n    ~/.claude/agents/fast.md (every tool, model: haiku)",
        );
      },
    );
  },
);

describe.each(moduleVersions("s06", ["agents.ts"]))("$id agents.ts", (chapter) => {
  let agents: typeof AgentsModule;
  beforeAll(async () => {
    agents = await importChapter<typeof AgentsModule>(chapter, "agents.ts");
  });
  const load = (files: Record<string, string>) => {
    const workdir = tempWorkspace("agents");
    writeFiles(workdir, files);
    return agents.loadAgents(workdir, undefined);
  };

  it.each([
    ["---\nname: [x\n---\nbody", "frontmatter is not valid YAML (line 2, column 9"],
    ["---\nname: a\ndescription: d\n", "frontmatter has no closing '---' line; skipped"],
    ["no frontmatter at all", "frontmatter has no name; skipped"],
    ["---\ndescription: d\n---\nbody", "frontmatter has no name; skipped"],
    [
      "---\nname: Code Reviewer\ndescription: d\n---\nbody",
      'name "Code Reviewer" is not lowercase letters, digits and hyphens; skipped',
    ],
    [
      "---\nname: a\n---\nbody",
      "frontmatter has no description (the model reads it to choose the agent); skipped",
    ],
    [
      "---\nname: a\ndescription: d\ntools: 3\n---\nbody",
      "tools is a number; write names separated by commas, or a list; skipped",
    ],
    [
      "---\nname: a\ndescription: d\ntools: [Read, 2]\n---\nbody",
      "tools is a list; write names separated by commas, or a list; skipped",
    ],
    [
      "---\nname: a\ndescription: d\nmodel: [x]\n---\nbody",
      "model is a list; write sonnet, opus, haiku, inherit or a model id; skipped",
    ],
    [
      "---\nname: a\ndescription: d\n---\n",
      "the body is empty: it holds the agent's instructions; skipped",
    ],
  ])("reports %j with its file and skips it; the good one still loads", (text, problem) => {
    const loaded = load({
      ".claude/agents/bad.md": text,
      ".claude/agents/good.md": "---\nname: good\ndescription: Fine.\n---\nDo it.\n",
    });
    expect(loaded.agents.map((agent) => agent.name)).toEqual(["good"]);
    expect(loaded.problems).toHaveLength(1);
    expect(loaded.problems[0]).toContain(`.claude/agents/bad.md: ${problem}`);
  });

  it("reads tools as a comma list or a YAML list, skips hidden and non-Markdown files", () => {
    const loaded = load({
      ".claude/agents/a.md": "---\nname: a\ndescription: A.\ntools: Read,  Bash ,\n---\nA.",
      ".claude/agents/b.md": "---\nname: b\ndescription: B.\ntools:\n  - Write\n---\nB.",
      ".claude/agents/.hidden.md": "---\nname: h\ndescription: H.\n---\nH.",
      ".claude/agents/notes.txt": "not an agent",
    });
    expect(loaded.problems).toEqual([]);
    expect(loaded.agents.map((agent) => [agent.name, agent.tools])).toEqual([
      ["a", ["Read", "Bash"]],
      ["b", ["Write"]],
    ]);
  });

  it("maps Claude Code's tool names and the course's to the child's tools; the rest are unknown", async () => {
    const tools = new Map((await baseTools(chapter)).map((tool) => [tool.name, tool]));
    const agent = (names: string[] | null) => ({
      name: "x",
      description: "x",
      tools: names,
      model: null,
      prompt: "x",
      file: "x.md",
    });
    const mapped = agents.agentTools(agent(["Bash", "Edit", "write_file", "WebFetch"]), tools);
    expect([...mapped.tools.keys()]).toEqual(["bash", "write_file", "edit_file"]);
    expect(mapped.unknown).toEqual(["WebFetch"]);
    expect(agents.agentTools(agent(null), tools).tools).toBe(tools);
  });

  it("gives hooks the call as Claude Code's Task: subagent_type defaults to general-purpose", async () => {
    const sub = await importChapter<typeof SubagentModule>(chapter, "subagent.ts");
    const task = sub.taskTool({} as Parameters<typeof sub.taskTool>[0]);
    expect(task.claudeCode?.name).toBe("Task");
    expect(task.claudeCode?.input?.({ prompt: "p" }, "/w")).toEqual({
      prompt: "p",
      subagent_type: "general-purpose",
    });
    expect(task.claudeCode?.input?.({ prompt: "p", subagent_type: "x" }, "/w")).toEqual({
      prompt: "p",
      subagent_type: "x",
    });
  });

  it("resolves model: none and inherit to the session's, an alias through its variable or with a note, an id as written", () => {
    const def = (model: string | null) => ({
      name: "x",
      description: "x",
      tools: null,
      model,
      prompt: "x",
      file: "x.md",
    });
    const env = { ANTHROPIC_DEFAULT_OPUS_MODEL: "claude-opus-test" };
    expect(agents.agentModel(def(null), "s", env)).toEqual({ model: "s", note: null });
    expect(agents.agentModel(def("inherit"), "s", env)).toEqual({ model: "s", note: null });
    expect(agents.agentModel(def("opus"), "s", env)).toEqual({
      model: "claude-opus-test",
      note: null,
    });
    expect(agents.agentModel(def("claude-x-1"), "s", env)).toEqual({
      model: "claude-x-1",
      note: null,
    });
    expect(agents.agentModel(def("sonnet"), "s", env)).toEqual({
      model: "s",
      note: "model 'sonnet' is an alias: set ANTHROPIC_DEFAULT_SONNET_MODEL to choose its model; using s",
    });
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
