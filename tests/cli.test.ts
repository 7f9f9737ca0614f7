/**
 * End-to-end smoke runs: each chapter started the way a learner starts it,
 * `pnpm --filter sNN start`, prompts piped in, the fake server as ANTHROPIC_BASE_URL.
 * A process start costs 1–2 s of CPU here, so each chapter gets one run: the
 * scenario of its own mechanism where it has one, the basic scenario otherwise. Every run
 * also checks what every chapter must do (banner, echoed prompts, exit 0, valid requests,
 * the session log).
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import {
  apiError,
  type FakeServer,
  reply,
  ScriptedModel,
  type ScriptStep,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { describe, expect, it } from "vitest";
import { BASE_TOOLS, CHAPTERS, type Chapter, chaptersFrom } from "./chapters.ts";
import { type CliRun, REPO_ROOT, runPnpm, runPnpmInTerminal } from "./helpers/cli.ts";
import { endsWithin } from "./helpers/process.ts";
import {
  afterTools,
  goalVerdict,
  isGoalEvaluator,
  isWorkflowAgent,
  lastMentions,
  lastToolResults,
  RETRY_AT_ONCE,
  reviewAgentAnswer,
  tempWorkspace,
  writeFiles,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
const withTools = (r: Request) => (r.tools?.length ?? 0) > 0;
const names = (r: Request) => (r.tools as Anthropic.Tool[]).map((t) => t.name);

interface Outcome {
  stdout: string;
  workdir: string;
  requests: Request[];
  headers: Array<Record<string, string | string[] | undefined>>;
}

interface Scenario {
  title: string;
  input: string;
  steps: ScriptStep[];
  /** Files to write first (a function when they must name the workspace). */
  files?: Record<string, string> | ((workdir: string) => Record<string, string>);
  env?: Record<string, string>;
  /** Keeps stdin open until stdout shows a text, then ends it or signals the chapter (runPnpm). */
  whenShown?: { text: string; action: "end input" | NodeJS.Signals };
  /** The run is meant to be killed by `whenShown` (its exit status and pnpm's note aside). */
  killed?: boolean;
  /** Every answer of the fake API waits this long (so a kill lands mid-way). */
  latencyMs?: number;
  /** Checks the run; `again` starts the chapter once more in the same workspace. */
  check(outcome: Outcome, again: (next: Scenario) => Promise<Outcome>): void | Promise<void>;
}

/** The basic scenario: a tool round that writes a file, then a second line. */
const BASIC: Scenario = {
  title: "runs piped prompts against a configured endpoint with the real SDK",
  input: "write the file\nand again\n",
  env: { ANTHROPIC_AUTH_TOKEN: "cli-token" },
  steps: [
    {
      reply: reply(
        text("Writing it."),
        toolUse("bash", { command: "echo 日本語 > out.txt && cat out.txt" }),
      ),
    },
    { when: afterTools, reply: reply(text("Wrote out.txt.")) },
    { reply: reply(text("Second answer.")) },
  ],
  check({ stdout, workdir, requests, headers }) {
    expect(stdout).toContain("Wrote out.txt.");
    expect(stdout).toContain("Second answer.");
    expect(readFileSync(path.join(workdir, "out.txt"), "utf8")).toBe("日本語\n");
    expect(requests.filter(withTools)).toHaveLength(3);
    expect(headers[0]!.authorization).toBe("Bearer cli-token");
    expect(headers[0]!["x-api-key"]).toBeUndefined();
    expect(lastToolResults(requests.filter(withTools)[1]!)[0]?.content).toBe("日本語");
  },
};

/** Chapters whose issue asked for a command-line check of their own mechanism. */
const SCENARIOS: Record<string, Scenario> = {
  s03: {
    title: "denies an approval on piped stdin and lets an allow rule through",
    input: "remove both\n",
    files: {
      "a.txt": "a",
      "b.txt": "b",
      ".claude/settings.json": JSON.stringify({ permissions: { allow: ["Bash(rm b.txt)"] } }),
    },
    steps: [
      {
        reply: reply(
          toolUse("bash", { command: "rm a.txt" }),
          toolUse("bash", { command: "rm b.txt" }),
        ),
      },
      { when: afterTools, reply: reply(text("done")) },
    ],
    check({ stdout, workdir }) {
      expect(stdout).toContain("[denied] Permission denied: approval needed");
      expect(existsSync(path.join(workdir, "a.txt"))).toBe(true);
      expect(existsSync(path.join(workdir, "b.txt"))).toBe(false);
    },
  },
  s04: {
    title: "runs a command hook from .claude/settings.json",
    input: "go\n",
    files: {
      ".claude/settings.json": JSON.stringify({
        hooks: {
          PreToolUse: [
            { matcher: "Bash", hooks: [{ type: "command", command: "cat > hook-input.json" }] },
          ],
        },
      }),
    },
    steps: [
      { reply: reply(toolUse("bash", { command: "echo hi" })) },
      { when: afterTools, reply: reply(text("done")) },
    ],
    check({ stdout, workdir }) {
      const input = JSON.parse(readFileSync(path.join(workdir, "hook-input.json"), "utf8"));
      expect(input).toMatchObject({
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "echo hi" },
      });
      expect(stdout).toContain("[hook] PreToolUse (matcher Bash): cat > hook-input.json");
    },
  },
  s06: {
    title: "starts the subagent from fresh messages without the task tool",
    input: "delegate\n",
    steps: [
      {
        when: (r) => names(r).includes("task") && r.messages.length === 1,
        reply: reply(toolUse("task", { prompt: "Count to three." })),
      },
      {
        when: (r) => !names(r).includes("task") && r.messages.length === 1,
        reply: reply(toolUse("bash", { command: "echo 1 2 3" })),
      },
      {
        when: (r) => !names(r).includes("task") && lastToolResults(r).length > 0,
        reply: reply(text("one two three")),
      },
      {
        when: (r) => names(r).includes("task") && lastToolResults(r).length > 0,
        reply: reply(text("the child counted")),
      },
    ],
    check({ stdout, requests }) {
      const child = requests.filter((r) => withTools(r) && !names(r).includes("task"));
      expect(child).toHaveLength(2);
      expect(child[0]!.messages).toEqual([{ role: "user", content: "Count to three." }]);
      expect(names(child[0]!)).toEqual(BASE_TOOLS);
      expect(lastToolResults(requests.at(-1)!)[0]?.content).toBe("one two three");
      expect(stdout).toContain('  [sub] > bash({"command":"echo 1 2 3"})');
    },
  },
  s07: {
    title: "sends the catalog, not the body, and load_skill returns the folder and the whole file",
    input: "greet me\n",
    files: {
      "skills/greet/SKILL.md":
        "---\nname: greet\ndescription: Greet people properly.\n---\n# Greet\nSECRET-BODY-LINE\n",
    },
    steps: [
      {
        when: (r) => r.messages.length === 1,
        reply: reply(toolUse("load_skill", { name: "greet" })),
      },
      { when: afterTools, reply: reply(text("loaded")) },
    ],
    check({ requests, workdir }) {
      expect(requests[0]!.system).toContain("- greet: Greet people properly.");
      expect(String(requests[0]!.system)).not.toContain("SECRET-BODY-LINE");
      expect(lastToolResults(requests[1]!)[0]?.content).toBe(
        `Base directory for this skill: ${path.join(workdir, "skills/greet")}\n\n` +
          readFileSync(path.join(workdir, "skills/greet/SKILL.md"), "utf8"),
      );
    },
  },
  s08: {
    title: "compacts once and retries when the API says the prompt is too long",
    input: "hello\n",
    steps: [
      {
        when: withTools,
        reply: apiError(
          400,
          "invalid_request_error",
          "prompt is too long: 210000 tokens > 200000 maximum",
        ),
      },
      { when: (r) => !withTools(r), reply: reply(text("the user said hello")) },
      { when: withTools, reply: reply(text("after the retry")) },
    ],
    check({ stdout, requests }) {
      expect(requests.map((r) => (withTools(r) ? "main" : "summary"))).toEqual([
        "main",
        "summary",
        "main",
      ]);
      expect(stdout).toContain("[compact reactive]");
      expect(stdout).toContain("after the retry");
    },
  },
  s09: {
    title: "remembers across two runs in one workspace",
    input: "I prefer tabs. Remember it.\n",
    steps: [
      { when: withTools, reply: reply(text("noted")) },
      {
        when: (r) => !withTools(r) && String(r.system).includes("extract durable memory"),
        reply: reply(
          text(
            JSON.stringify([
              {
                name: "Tabs",
                type: "user",
                scope: "persistent",
                description: "Prefers tabs over spaces",
                body: "Indent with tabs.",
              },
            ]),
          ),
        ),
      },
    ],
    async check(first, again) {
      expect(first.stdout).toContain("[memory] stored 1 record(s): Tabs");
      const second = await again({
        title: "run 2",
        input: "What do I prefer?\n",
        steps: [{ when: withTools, reply: reply(text("tabs")) }],
        check() {},
      });
      expect(second.requests.find(withTools)!.system).toContain(
        "Memory catalog:\n- [Tabs](tabs.md) - Prefers tabs over spaces",
      );
    },
  },
};

const JOB_PID = "sleep 30 & echo $! > job.pid.tmp && mv job.pid.tmp job.pid; wait";

/** s11's run: what every later chapter must still do with background jobs. */
SCENARIOS.s11 = {
  title: "delivers a job that ends while the model works, and SIGTERM leaves no job behind",
  input: "check in the background\n",
  steps: [
    {
      when: (r) => withTools(r) && r.messages.length === 1,
      reply: reply(
        toolUse("bash", { command: "sleep 0.3; echo bg-ok", run_in_background: true }),
        toolUse("bash", { command: JOB_PID, run_in_background: true }),
        toolUse("bash", { command: "sleep 0.8; echo fg-done" }),
      ),
    },
    { when: (r) => withTools(r) && afterTools(r), reply: reply(text("JOB CHECKED")) },
  ],
  whenShown: { text: "JOB CHECKED", action: "SIGTERM" },
  async check({ stdout, workdir, requests }) {
    const second = requests.filter(withTools)[1]!;
    const last = second.messages.at(-1)!.content as Anthropic.ContentBlockParam[];
    expect(last.map((b) => b.type)).toEqual(["tool_result", "tool_result", "tool_result", "text"]);
    expect(lastToolResults(second).map((r) => r.content)).toEqual([
      "[Background task bg_0001 started] The result will be collected on a later turn.",
      "[Background task bg_0002 started] The result will be collected on a later turn.",
      "fg-done",
    ]);
    expect((last[3] as Anthropic.TextBlockParam).text).toContain("<summary>bg-ok</summary>");
    expect(stdout).toContain("[background] collected bg_0001: completed");
    const pid = Number(readFileSync(path.join(workdir, "job.pid"), "utf8"));
    expect(await endsWithin(pid, 2000)).toBe(true);
  },
};

const isScheduled = (r: Request) => JSON.stringify(r.messages.at(-1)).includes("[Scheduled]");

/** s12's run: a job for the next minute, due a couple of seconds after start-up. */
SCENARIOS.s12 = {
  title: "runs a one-shot job for the next minute as a scheduled turn, then exits at EOF",
  input: "remind me at nine\n",
  env: { ANTHROPIC_API_KEY: "cli-key", HARNESS_CLOCK_START: "2026-03-02T08:59:58" },
  steps: [
    {
      when: (r) => withTools(r) && r.messages.length === 1,
      reply: reply(
        toolUse("schedule_cron", { cron: "0 9 * * *", prompt: "stand up", recurring: false }),
      ),
    },
    { when: (r) => withTools(r) && afterTools(r), reply: reply(text("REMINDER SET")) },
    { when: (r) => withTools(r) && isScheduled(r), reply: reply(text("SCHEDULED TURN DONE")) },
  ],
  whenShown: { text: "SCHEDULED TURN DONE", action: "end input" },
  check({ stdout, workdir, requests }) {
    const scheduled = requests.filter((r) => withTools(r) && isScheduled(r));
    expect(scheduled).toHaveLength(1);
    expect(scheduled[0]!.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "text", text: "[Scheduled] stand up" }],
    });
    expect(String(scheduled[0]!.system)).toContain(
      "Current local time: 2026-03-02 09:00 (Monday, ",
    );
    expect(stdout).toMatch(/\[cron\] scheduled (cron_[0-9a-f]{8}): 0 9 \* \* \* -> stand up/);
    expect(stdout).toContain("[cron] due cron_");
    // Delivered only once the agent was idle, whenever it became due.
    expect(stdout.indexOf("[cron] delivered cron_")).toBeGreaterThan(
      stdout.indexOf("REMINDER SET"),
    );
    expect(readFileSync(path.join(workdir, ".harness", "cron.json"), "utf8")).toBe("[]\n");
  },
};

const teammate = (name: string) => (r: Request) => String(r.system).includes(`You are '${name}'`);
const lastText = (r: Request) => {
  const content = r.messages.at(-1)!.content;
  return typeof content === "string"
    ? content
    : content.map((b) => (b.type === "text" ? b.text : "")).join("\n");
};
const isLead = (r: Request) => withTools(r) && names(r).includes("spawn_teammate");
const teamEvents = (r: Request) => isLead(r) && lastText(r).startsWith("[Team events]");
const resultsOf = (r: Request) => lastToolResults(r).map((b) => String(b.content));
const racer = (r: Request) => teammate("bob")(r) || teammate("carol")(r);

/** The lead's answer to a team-event turn: review alice's plans, then shut the team down. */
function leadOnEvents(r: Request) {
  const history = JSON.stringify(r.messages);
  const plan = /\[plan_approval_request request_id=(req_\d+)\]/.exec(lastText(r));
  if (plan) {
    const first = history.split("[plan_approval_request").length === 2;
    return reply(toolUse("review_plan", { request_id: plan[1], approve: !first }));
  }
  const done = ["ALICE DONE", "RACE DONE", "[permission_denied]"].every((t) => history.includes(t));
  if (done && !history.includes("request_shutdown")) {
    return reply(
      ...["alice", "bob", "carol"].map((teammate) => toolUse("request_shutdown", { teammate })),
    );
  }
  return reply(text(lastText(r).includes("[shutdown_response") ? "TEAM DONE" : "noted"));
}

/** s13's run: three teammates, a plan rejected then approved, a race, a denial, a shutdown. */
SCENARIOS.s13 = {
  title:
    "delegates through tasks to three teammates: plan rejected then approved, a race for one task, a denied call reported, shutdown",
  input: "team up\n",
  env: { ANTHROPIC_API_KEY: "cli-key", TEAM_IDLE_SCAN_MS: "100" },
  steps: [
    {
      when: (r) => isLead(r) && lastText(r) === "team up",
      reply: reply(
        toolUse("create_task", { subject: "planned work" }),
        toolUse("create_task", { subject: "race task" }),
      ),
    },
    {
      when: (r) => isLead(r) && resultsOf(r)[0]?.startsWith("Created") === true,
      reply: (r) => {
        const planned = /Created (task_[0-9a-f]{8}): planned work/.exec(resultsOf(r)[0]!)![1];
        const spawn = (name: string, extra = {}) =>
          toolUse("spawn_teammate", { name, role: "dev", prompt: "Work.", ...extra });
        return reply(
          spawn("alice", { task_id: planned, require_plan: true }),
          spawn("bob"),
          spawn("carol"),
        );
      },
    },
    {
      when: (r) => isLead(r) && resultsOf(r)[0]?.startsWith("Teammate") === true,
      reply: reply(text("TEAM STARTED")),
    },
    {
      when: (r) => isLead(r) && /^(Plan|Shutdown) /.test(resultsOf(r)[0] ?? ""),
      reply: reply(text("ok")),
    },
    ...Array.from({ length: 20 }, () => ({ when: teamEvents, reply: leadOnEvents })),
    {
      when: (r) => teammate("alice")(r) && r.messages.length === 1,
      reply: reply(toolUse("submit_plan", { plan: "v1" })),
    },
    {
      when: (r) => teammate("alice")(r) && lastText(r).startsWith("[Plan rejected]"),
      reply: reply(toolUse("submit_plan", { plan: "v2" })),
    },
    ...[1, 2].map(() => ({
      when: (r: Request) =>
        teammate("alice")(r) && resultsOf(r)[0]?.startsWith("Plan submitted") === true,
      reply: reply(text("waiting for lead")),
    })),
    {
      when: (r) => teammate("alice")(r) && lastText(r).startsWith("[Plan approved]"),
      reply: (r) =>
        reply(
          toolUse("write_file", { path: "planned.txt", content: "planned\n" }),
          toolUse("complete_task", {
            task_id: /\[Assigned task (task_\w+)\]/.exec(JSON.stringify(r.messages))![1],
          }),
        ),
    },
    {
      when: (r) => teammate("alice")(r) && resultsOf(r).length === 2,
      reply: reply(text("ALICE DONE")),
    },
    ...["bob", "carol"].map((name) => ({
      when: (r: Request) => teammate(name)(r) && r.messages.length === 1,
      reply: reply(text(`${name} ready`)),
    })),
    {
      when: (r) => racer(r) && lastText(r).startsWith("[Auto-claimed task"),
      reply: (r) =>
        reply(
          toolUse("bash", { command: "rm -rf build" }),
          toolUse("complete_task", {
            task_id: /\[Auto-claimed task (task_\w+)\]/.exec(lastText(r))![1],
          }),
        ),
    },
    { when: (r) => racer(r) && resultsOf(r).length === 2, reply: reply(text("RACE DONE")) },
  ],
  whenShown: { text: "[all teammates shut down]", action: "end input" },
  check({ stdout, workdir, requests }) {
    const claims = stdout.match(/\[idle\] (bob|carol) claimed (task_\w+): race task/g) ?? [];
    expect(claims).toHaveLength(1);
    const winner = /\[idle\] (bob|carol) claimed/.exec(claims[0]!)![1]!;
    const race = requests.find((r) => teammate(winner)(r) && resultsOf(r).length === 2)!;
    expect(resultsOf(race)[0]).toBe(
      "Permission denied: approval needed (Potentially destructive command: rm) but a team turn cannot ask the user; an allow rule in .claude/settings.json can permit this call.",
    );
    const told = requests.filter(teamEvents).map(lastText).join("\n");
    expect(told).toContain(
      `[permission_denied] ${winner}: bash({"command":"rm -rf build"}) needs approval`,
    );
    expect(told).toContain(`[result] ${winner}: RACE DONE`);
    expect(told).toContain("[result] alice: ALICE DONE");
    expect(
      told.match(/\[shutdown_response request_id=req_\d{6}\] \w+: Shutdown acknowledged\./g),
    ).toHaveLength(3);
    const reviews = requests
      .filter((r) => isLead(r) && resultsOf(r)[0]?.startsWith("Plan "))
      .map((r) => resultsOf(r)[0]);
    expect(reviews.map((t) => t!.split(" (")[0])).toEqual(["Plan rejected", "Plan approved"]);
    expect(readFileSync(path.join(workdir, "planned.txt"), "utf8")).toBe("planned\n");
    const tasks = readdirSync(path.join(workdir, ".harness", "tasks"));
    expect(tasks).not.toContain(".lock");
    const saved = tasks.map((f) =>
      JSON.parse(readFileSync(path.join(workdir, ".harness", "tasks", f), "utf8")),
    );
    expect(saved.map((t) => [t.subject, t.status, t.owner]).sort()).toEqual([
      ["planned work", "completed", "alice"],
      ["race task", "completed", winner],
    ]);
    for (const name of ["alice", "bob", "carol"])
      expect(stdout).toContain(`[teammate] ${name} finished`);
    expect(stdout).toContain("TEAM DONE");
  },
};

const COURSE_SERVER = path.join(REPO_ROOT, "chapters", "s14-mcp", "servers", "course-mcp.mjs");
const FS_SERVER = path.join(
  REPO_ROOT,
  "tests",
  "node_modules",
  "@modelcontextprotocol",
  "server-filesystem",
  "dist",
  "index.js",
);

/** s14's run: the course server in both eras and the official filesystem server. */
SCENARIOS.s14 = {
  title:
    "connects the course server in both eras and the official filesystem server; rules allow, the rest is denied",
  input: "use the servers\n",
  files: (workdir) => ({
    ".mcp.json": JSON.stringify({
      mcpServers: {
        docs: {
          command: "node",
          args: [COURSE_SERVER, "docs", "--pidfile", "${WORKDIR}/docs.pid"],
        },
        deploy: { command: "node", args: [COURSE_SERVER, "deploy", "--legacy"] },
        fs: { command: "node", args: [FS_SERVER, workdir] },
      },
    }),
    ".claude/settings.json": JSON.stringify({
      permissions: { allow: ["mcp__docs", "mcp__deploy__status", "mcp__fs__*"] },
    }),
  }),
  steps: [
    {
      when: (r) => withTools(r) && r.messages.length === 1,
      reply: reply(...["docs", "deploy", "fs"].map((name) => toolUse("connect_mcp", { name }))),
    },
    {
      when: (r) => withTools(r) && lastToolResults(r).length === 3,
      reply: reply(
        toolUse("mcp__docs__search", { query: "hooks" }),
        toolUse("mcp__deploy__status", { service: "web" }),
        toolUse("mcp__fs__list_allowed_directories", {}),
        toolUse("mcp__deploy__trigger", { service: "web" }),
      ),
    },
    {
      when: (r) => withTools(r) && lastToolResults(r).length === 4,
      reply: reply(text("SERVERS USED")),
    },
  ],
  async check({ stdout, workdir, requests }) {
    const [, second, third] = requests.filter(withTools);
    expect(lastToolResults(second!).map((b) => String(b.content).split(".")[0])).toEqual([
      "Connected to MCP server 'docs' (modern 2026-07-28)",
      "Connected to MCP server 'deploy' (legacy 2025-11-25)",
      "Connected to MCP server 'fs' (legacy 2025-11-25)",
    ]);
    expect(names(second!)).toContain("mcp__fs__list_allowed_directories");
    expect(lastToolResults(third!).map((b) => b.content)).toEqual([
      "[docs] Found 3 results for 'hooks'",
      "[deploy] web: running (v1.4.2)",
      `Allowed directories:\n${workdir}`,
      "Permission denied: approval needed (MCP tool mcp__deploy__trigger) but stdin is not a terminal; an allow rule in .claude/settings.json can permit this call.",
    ]);
    expect(stdout).toContain("[mcp] connected fs (legacy 2025-11-25, ");
    // No server outlives the harness.
    const pid = Number(readFileSync(path.join(workdir, "docs.pid"), "utf8"));
    expect(await endsWithin(pid, 2000)).toBe(true);
  },
};

/** s15's run: the faults a real service has, recovered from in one session. */
const lastIs = (line: string) => (r: Request) => withTools(r) && lastMentions(line)(r);
const soon = { headers: RETRY_AT_ONCE };
SCENARIOS.s15 = {
  title:
    "recovers from 529s (with the fallback model), a 500, a stream cut mid-message and a max_tokens stop",
  input: "summarise\nlong one\n",
  env: { ANTHROPIC_API_KEY: "cli-key", FALLBACK_MODEL_ID: "claude-fallback-1" },
  steps: [
    { when: lastIs("summarise"), reply: apiError(529, "overloaded_error", "Overloaded", soon) },
    { when: lastIs("summarise"), reply: apiError(529, "overloaded_error", "Overloaded", soon) },
    { when: lastIs("summarise"), reply: reply(text("Summary from the fallback.")) },
    { when: lastIs("long one"), reply: apiError(500, "api_error", "Internal error", soon) },
    { when: lastIs("long one"), reply: { fault: "drop", afterEvents: 4 } },
    {
      when: lastIs("long one"),
      reply: { ...reply(text("The first half")), stop_reason: "max_tokens" },
    },
    { when: lastIs("long one"), reply: reply(text("The long answer, whole.")) },
  ],
  check({ stdout, requests }) {
    for (const line of [
      "[retry] overloaded (529); attempt 2 of 4 in 0.0 s",
      "[fallback] 2 overloaded answers in a row: the rest of this turn uses claude-fallback-1",
      "Summary from the fallback.",
      "[retry] server error (500); attempt 2 of 4 in 0.0 s",
      "[retry] the stream ended before the answer did; attempt 3 of 4 in ",
      "[max_tokens] the reply hit 8000 tokens: asking again with 16000",
      "The long answer, whole.",
    ]) {
      expect(stdout).toContain(line);
    }
    const main = requests.filter(withTools);
    expect(main.map((r) => r.model)).toEqual([
      "claude-sonnet-4-6",
      "claude-sonnet-4-6",
      "claude-fallback-1",
      ...Array(4).fill("claude-sonnet-4-6"),
    ]);
    expect(main.map((r) => r.max_tokens)).toEqual([...Array(6).fill(8000), 16000]);
    expect(main.every((r) => "stream" in r && r.stream === true)).toBe(true);
  },
};

const WORKFLOW_RESULT = /"launched":\{"status":"async_launched"/;

SCENARIOS.s16 = {
  title:
    "a run killed mid-way resumes without redoing a finished call; a mismatched resume is refused",
  input: "review the change\n",
  latencyMs: 200,
  steps: [
    { when: isWorkflowAgent, repeat: true, reply: reviewAgentAnswer },
    {
      when: lastIs("review the change"),
      reply: reply(toolUse("Workflow", { name: "review-changes", args: { changes: "+ sql" } })),
    },
  ],
  // The first finished agent call is on disk when its line shows: the process dies there.
  whenShown: { text: "status=done", action: "SIGKILL" },
  killed: true,
  async check(first, again) {
    const dir = path.join(first.workdir, ".harness", "workflows");
    const runId = readdirSync(dir)
      .find((name) => /^wf_review-changes_[0-9a-f]{16}\.json$/.test(name))!
      .slice(0, -".json".length);
    const journaled = readFileSync(path.join(dir, `${runId}.journal.jsonl`), "utf8")
      .trim()
      .split("\n");
    expect(journaled.length).toBeGreaterThanOrEqual(1);
    expect(existsSync(path.join(dir, `${runId}.lock`))).toBe(true);
    const resume = (args?: object) =>
      reply(toolUse("Workflow", { name: "review-changes", resume_from_run_id: runId, ...args }));
    const second = await again({
      title: "run 2",
      input: "resume it\n",
      steps: [
        { when: isWorkflowAgent, repeat: true, reply: reviewAgentAnswer },
        { when: lastIs("resume it"), reply: resume({ args: { changes: "other" } }) },
        { when: (r) => withTools(r) && afterTools(r) && !resumed(r), reply: resume() },
        { when: (r) => withTools(r) && resumed(r), reply: reply(text("resumed")) },
      ],
      check() {},
    });
    const main = second.requests.filter(withTools);
    expect(lastToolResults(main[1]!)[0]).toMatchObject({
      content: "Error: resume args do not match the original run",
      is_error: true,
    });
    expect(second.stdout).toContain(`[workflow] ${runId}.lock was left by a process that is gone`);
    const outcome = JSON.parse(String(lastToolResults(main[2]!)[0]!.content));
    expect(outcome.task.status).toBe("completed");
    expect(outcome.result.confirmed).toEqual([
      { dimension: "security", title: "injection", severity: "high" },
    ]);
    // Four audits and one verification in all: what was journaled is not asked again.
    const agents = second.requests.filter(isWorkflowAgent);
    expect(agents.length + journaled.length).toBe(5);
    expect(outcome.task.usage.agents).toBe(agents.length);
    const cached = second.stdout.split("\n").filter((line) => line.endsWith("status=cached"));
    expect(cached).toHaveLength(journaled.length);
  },
};

SCENARIOS.s17 = {
  title: "a prose verdict keeps the goal; a restart restores it; not done twice, then done",
  input: "/goal the report lists three risks\n",
  steps: [
    { when: isGoalEvaluator, reply: reply(text('Looks complete. {"ok": true, "reason": "done"}')) },
    { when: lastIs("the report lists three risks"), reply: reply(text("Report written.")) },
  ],
  async check(first, again) {
    expect(first.stdout).toContain("[goal] error: GoalError: goal evaluator returned invalid JSON");
    expect(first.stdout).not.toContain("[goal] achieved");
    const second = await again({
      title: "run 2",
      input: "go on\n/goal\n",
      steps: [
        { when: isGoalEvaluator, reply: goalVerdict(false, "no risks listed") },
        { when: isGoalEvaluator, reply: goalVerdict(false, "only two risks") },
        { when: isGoalEvaluator, reply: goalVerdict(true, "three risks listed") },
        { when: lastIs("go on"), reply: reply(text("Working.")) },
        { when: lastIs("no risks listed"), reply: reply(text("Risks: a, b.")) },
        { when: lastIs("only two risks"), reply: reply(text("Risks: a, b, c.")) },
      ],
      check() {},
    });
    expect(second.stdout).toContain("[goal] restored: the report lists three risks");
    const verdicts = second.stdout
      .split("\n")
      .filter((line) => /^\[goal\] (block|achieved)/.test(line));
    expect(verdicts).toEqual([
      "[goal] block: no risks listed",
      "[goal] block: only two risks",
      "[goal] achieved: three risks listed",
    ]);
    expect(second.stdout).toContain("Goal achieved: the report lists three risks");
    expect(second.requests.filter(isGoalEvaluator).map((r) => r.max_tokens)).toEqual([
      512, 512, 512,
    ]);
  },
};

const resumed = (r: Request) =>
  lastToolResults(r).some((b) => WORKFLOW_RESULT.test(String(b.content)));

/** What every chapter's run must show, whatever it is being asked. */
function everyChapter(
  chapter: Chapter,
  scenario: Pick<Scenario, "input" | "killed">,
  run: CliRun,
  server: FakeServer,
  workdir: string,
) {
  if (scenario.killed) {
    expect(run.code).not.toBe(0);
  } else {
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  }
  expect(run.stdout).toContain(`${chapter.id}: ${chapter.title}`);
  expect(run.stdout).toContain(`${chapter.id} >> ${scenario.input.split("\n")[0]}`);
  expect(server.requests.every((r) => r.rejected === null)).toBe(true);
  expect(readdirSync(path.join(workdir, ".harness", "logs")).length).toBeGreaterThanOrEqual(2);
}

async function start(chapter: Chapter, scenario: Scenario, workdir: string) {
  const files = typeof scenario.files === "function" ? scenario.files(workdir) : scenario.files;
  writeFiles(workdir, files ?? {});
  const server = await startFakeServer({
    model: new ScriptedModel(scenario.steps),
    ...(scenario.latencyMs ? { latencyMs: scenario.latencyMs } : {}),
  });
  try {
    const run = await runPnpm(["--silent", "--filter", chapter.id, "start"], {
      input: scenario.input,
      whenShown: scenario.whenShown,
      env: {
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "",
        WORKDIR: workdir,
        ...(scenario.env ?? { ANTHROPIC_API_KEY: "cli-key" }),
      },
    });
    everyChapter(chapter, scenario, run, server, workdir);
    return {
      stdout: run.stdout,
      workdir,
      requests: server.requests.map((r) => r.body as Request),
      headers: server.requests.map((r) => r.headers),
    };
  } finally {
    await server.close();
  }
}

// Two chapters' one run is below: s01 with nothing configured (a newcomer's first command:
// its offline demo, through the real SDK against a local scripted API), s10's race of two
// processes. Both check what every run checks.
const OWN_RUN = new Set(["s01", "s10"]);

describe.concurrent.each(chaptersFrom("s01").filter((c) => !OWN_RUN.has(c.id)))(
  "$id from the command line",
  (chapter) => {
    const scenario = SCENARIOS[chapter.id] ?? BASIC;
    it(scenario.title, async () => {
      const workdir = tempWorkspace(`cli-${chapter.id}`);
      const again = (next: Scenario) => start(chapter, next, workdir);
      await scenario.check(await start(chapter, scenario, workdir), again);
    });
  },
);

// One process in a pseudo-terminal, on the newest chapter: Ctrl-C's meaning is cumulative.
describe.each(CHAPTERS.slice(-1))("$id in a terminal", (chapter) => {
  it("Ctrl-C cancels the running turn and its command, the session goes on, and Ctrl-C at the prompt exits 0", async () => {
    const workdir = tempWorkspace(`cli-tty-${chapter.id}`);
    const server = await startFakeServer({
      model: new ScriptedModel([
        { when: lastIs("wait"), reply: reply(toolUse("bash", { command: "sleep 30" })) },
        { when: lastIs("after"), reply: reply(text("still here")) },
      ]),
    });
    try {
      const started = Date.now();
      const run = await runPnpmInTerminal(
        ["--silent", "--filter", chapter.id, "start"],
        [
          { after: `${chapter.id} >> `, send: "wait\r" },
          { after: "> bash(", send: "\x03" },
          { after: "[interrupted]", send: "after\r" },
          { after: "still here", send: "\x03" },
        ],
        {
          env: {
            ANTHROPIC_BASE_URL: server.url,
            ANTHROPIC_API_KEY: "cli-key",
            WORKDIR: workdir,
            MEMORY_EXTRACT: "0",
          },
        },
      );
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("[interrupted]");
      expect(run.stdout).toContain("still here");
      // The 30 s command did not hold the session up.
      expect(Date.now() - started).toBeLessThan(15_000);
      // The next request was accepted, with the cancelled call answered.
      expect(server.requests.map((r) => r.rejected)).toEqual([null, null]);
      const second = server.requests[1]!.body as Request;
      expect(lastToolResults(second)[0]).toMatchObject({
        content: "Interrupted by the user",
        is_error: true,
      });
    } finally {
      await server.close();
    }
  });
});

describe("s01 from the command line, nothing configured", () => {
  it("runs its offline demo: banner, the scripted prompt, real commands, a session log", async () => {
    const run = await runPnpm(["--silent", "--filter", "s01", "start"], {
      // Empty values beat a developer's .env (the real environment wins).
      env: { ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "", ANTHROPIC_BASE_URL: "" },
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("No model configured: running this chapter's offline demo.");
    expect(run.stdout).toContain("s01: Agent Loop");
    expect(run.stdout).toContain("s01 >> What files are in this folder");
    // The commands ran for real in the demo's workspace.
    expect(run.stdout).toMatch(/> bash\(\{"command":"wc -l \*"\}\)\n\s+1 hello\.txt/);
    expect(run.stdout).toContain("Offline demo (s01)");
    expect(run.stdout).not.toMatch(/API error|scripted model: no step left/);
    const kept = /workspace is kept at (\S+)/.exec(run.stdout)?.[1];
    expect(readdirSync(path.join(kept!, ".harness", "logs")).length).toBeGreaterThanOrEqual(2);
    rmSync(kept!, { recursive: true, force: true });
  });
});

describe("configuration errors", () => {
  it("exit 1 with one line naming the problem", async () => {
    const run = await runPnpm(["--silent", "--filter", "s01", "start"], {
      env: { ANTHROPIC_API_KEY: "k", WORKDIR: "/no/such/place" },
    });
    expect(run.code).toBe(1);
    // pnpm adds its own failure note after the chapter's line.
    expect(run.stderr.split("\n")[0]).toBe(
      "s01: configuration error: WORKDIR does not exist: /no/such/place",
    );
    expect(run.stdout).not.toContain("s01 >>");
  });
});

describe("s10: two command lines on one workspace", () => {
  it("race to claim one task: exactly one Claimed, the other told it is taken", async () => {
    const workdir = tempWorkspace("cli-s10-race");
    const id = "task_0000abcd";
    const file = path.join(workdir, ".harness", "tasks", `${id}.json`);
    const task = { id, subject: "race me", description: "", status: "pending", owner: null };
    writeFiles(workdir, {
      [path.relative(workdir, file)]:
        `${JSON.stringify({ ...task, blockedBy: [], priority: 5 }, null, 2)}\n`,
    });
    const steps = (): ScriptStep[] => [
      {
        when: (r) => withTools(r) && r.messages.length === 1,
        reply: reply(toolUse("claim_task", { task_id: id })),
      },
      { when: (r) => withTools(r) && afterTools(r), reply: reply(text("claim tried")) },
    ];
    const servers = await Promise.all(
      [0, 1].map(() => startFakeServer({ model: new ScriptedModel(steps()) })),
    );
    try {
      const runs = await Promise.all(
        servers.map((server) =>
          runPnpm(["--silent", "--filter", "s10", "start"], {
            input: `claim ${id}\n`,
            env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "cli-key", WORKDIR: workdir },
          }),
        ),
      );
      const s10 = CHAPTERS.find((c) => c.id === "s10")!;
      runs.forEach((run, at) => {
        everyChapter(s10, { input: `claim ${id}\n` }, run, servers[at]!, workdir);
      });
      // What each model was sent back: one claim, one is_error refusal.
      const sent = servers.map((server) => {
        const last = server.requests
          .map((r) => r.body as Request)
          .filter(withTools)
          .at(-1)!;
        const result = lastToolResults(last)[0]!;
        return [result.content, result.is_error ?? false];
      });
      expect(sent).toEqual(
        expect.arrayContaining([
          [`Claimed ${id} (race me)`, false],
          [`Error: Task ${id} is in_progress, cannot claim`, true],
        ]),
      );
      const winners = runs.filter((run) => run.stdout.includes("[claim] race me -> in_progress"));
      expect(winners).toHaveLength(1);
      expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({
        status: "in_progress",
        owner: "agent",
      });
      expect(readdirSync(path.dirname(file))).toEqual([`${id}.json`]);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });
});
