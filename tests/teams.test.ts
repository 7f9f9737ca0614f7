/**
 * Agent teams, against every chapter from s13: mailboxes (whole lines, destructive reads by
 * rename, torn lines kept), protocols (request IDs, responses matched only when they answer
 * the request they name), worktree helpers (porcelain parsing, partial failures), and
 * through the chapter: the lead's 25 tools and a teammate's 11, the prompts, spawn's
 * refusals, the board (one task per owner, auto-claim by priority then ID, `/tasks
 * release`), the plan gate, the work-phase cap, a denied call reported to the lead, team
 * events as a turn of their own, worktrees end to end, and a clean exit.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import { type Main, UsageMeter } from "shared";
import { reply, type ScriptStep, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as BashModule from "../chapters/s13-teams/src/bash.ts";
import type * as MailboxModule from "../chapters/s13-teams/src/mailbox.ts";
import type * as ProtocolsModule from "../chapters/s13-teams/src/protocols.ts";
import type { Task } from "../chapters/s13-teams/src/task-record.ts";
import type * as StoreModule from "../chapters/s13-teams/src/tasks-store.ts";
import type * as TeamRuntimeModule from "../chapters/s13-teams/src/team-runtime.ts";
import type * as TeamsModule from "../chapters/s13-teams/src/teams.ts";
import type * as WorktreesModule from "../chapters/s13-teams/src/worktrees.ts";
import type * as HarnessModule from "../chapters/s14-mcp/src/harness.ts";
import type * as McpModule from "../chapters/s14-mcp/src/mcp.ts";
import {
  carried,
  chapterDir,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
  S13_TOOLS,
} from "./chapters.ts";
import { endsWithin, waitForPid } from "./helpers/process.ts";
import {
  lastToolResults,
  runChapter,
  runTyped,
  taskJson,
  tempWorkspace,
  toolNames,
  writeFiles,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;

const TEAMMATE_TOOLS = [
  "bash",
  "read_file",
  "write_file",
  "edit_file",
  "glob",
  "load_skill",
  "list_tasks",
  "claim_task",
  "complete_task",
  "send_message",
  "submit_plan",
];
const DENIED_RM =
  "Permission denied: approval needed (Potentially destructive command: rm) but a team turn " +
  "cannot ask the user; an allow rule in .claude/settings.json can permit this call.";

const blocksOf = (r: Request): Anthropic.ContentBlockParam[] => {
  const content = r.messages.at(-1)?.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
};
const lastText = (r: Request) =>
  blocksOf(r)
    .map((b) => (b.type === "text" ? b.text : ""))
    .join("\n");
const results = (r: Request) => lastToolResults(r).map((b) => String(b.content));
const isLead = (r: Request) => toolNames(r).includes("spawn_teammate");
const is = (name: string) => (r: Request) => String(r.system).includes(`You are '${name}'`);
const events = (r: Request) => isLead(r) && lastText(r).startsWith("[Team events]");
/** The lead's answers to team-event turns (how many arrive depends on timing). */
const noted = (): ScriptStep[] =>
  Array.from({ length: 6 }, () => ({ when: events, reply: reply(text("noted")) }));
const firstOf = (name: string) => (r: Request) => is(name)(r) && r.messages.length === 1;
const TEAM = { TEAM_IDLE_SCAN_MS: "50" };

/** A task file in the workspace, as s13's store writes it (with its worktree binding). */
const taskFile = (id: string, fields: Record<string, unknown> = {}) => ({
  [`.harness/tasks/${id}.json`]: taskJson(id, { worktree: null, ...fields }),
});
const readTask = (workdir: string, id: string) =>
  JSON.parse(readFileSync(path.join(workdir, ".harness", "tasks", `${id}.json`), "utf8"));

/** A git repository with one commit at `workdir`, and a runner for git in it. */
function gitRepo(workdir: string): (...args: string[]) => string {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: workdir, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  writeFiles(workdir, { "README.md": "repo\n" });
  git("-c", "user.email=t@t", "-c", "user.name=t", "add", "README.md");
  git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init");
  return git;
}

/** dave's first call: a command that sleeps in the background, its pid in sleep.pid. */
const daveSleeps: ScriptStep = {
  when: firstOf("dave"),
  reply: reply(
    toolUse("bash", {
      command: "sleep 30 & echo $! > sleep.pid.tmp && mv sleep.pid.tmp sleep.pid; wait",
    }),
  ),
};

/** Every line of every mailbox file this run left: each must be a whole JSON message. */
function mailboxLines(workdir: string): unknown[] {
  const root = path.join(workdir, ".harness", "mailboxes");
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((run) =>
    readdirSync(path.join(root, run)).flatMap((file) =>
      readFileSync(path.join(root, run, file), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
    ),
  );
}

/** teams.ts and the files it is split into: the runtime, its claims and messages, the tools. */
const TEAM_TS = [
  "teams.ts",
  "team-runtime.ts",
  "team-claims.ts",
  "team-messages.ts",
  "team-tools.ts",
];

describe.each(moduleVersions("s13", ["mailbox.ts", "protocols.ts", "worktrees.ts", ...TEAM_TS]))(
  "$id team modules",
  (chapter) => {
    let mailbox: typeof MailboxModule;
    let protocols: typeof ProtocolsModule;
    let worktrees: typeof WorktreesModule;
    let runtime: typeof TeamRuntimeModule;
    let store: typeof StoreModule;
    beforeAll(async () => {
      mailbox = await importChapter(chapter, "mailbox.ts");
      protocols = await importChapter(chapter, "protocols.ts");
      worktrees = await importChapter(chapter, "worktrees.ts");
      runtime = await importChapter(chapter, "team-runtime.ts");
      store = await importChapter(chapter, "tasks-store.ts");
    });
    const box = (workdir = tempWorkspace("mail")) => {
      const said: string[] = [];
      const bus = new mailbox.Mailbox({ workdir, run: "run1", say: (t) => said.push(t) });
      return { bus, said, workdir };
    };

    it("sends whole lines, reads them in order and destructively, peeks without reading", () => {
      const { bus, said, workdir } = box();
      expect(existsSync(path.join(workdir, ".harness"))).toBe(false);
      expect(bus.read("alice")).toEqual([]);
      expect(bus.peek("alice")).toBe(false);
      bus.send("lead", "alice", "first café", "message", { request_id: "req_000001" });
      bus.send("bob", "alice", "second");
      const file = path.join(workdir, ".harness", "mailboxes", "run1", "alice.jsonl");
      const raw = readFileSync(file, "utf8");
      expect(raw.split("\n")).toHaveLength(3);
      expect(raw).toContain("first café");
      expect(bus.peek("alice")).toBe(true);
      expect(bus.peek("alice")).toBe(true);
      const got = bus.read("alice");
      expect(got.map((m) => [m.from, m.content, m.type])).toEqual([
        ["lead", "first café", "message"],
        ["bob", "second", "message"],
      ]);
      expect(got[0]!.metadata).toEqual({ request_id: "req_000001" });
      expect(bus.read("alice")).toEqual([]);
      expect(existsSync(file)).toBe(false);
      expect(said[0]).toBe("  [bus] lead -> alice: (message) first café");
      bus.send("alice", "lead", "x".repeat(80));
      expect(said[2]).toBe(`  [bus] alice -> lead: (message) ${"x".repeat(50)}…`);
    });

    it("refuses a recipient that is not a plain name and writes nothing", () => {
      const { bus, workdir } = box();
      for (const bad of ["../escape", "a/b", "", "x".repeat(65)]) {
        expect(() => bus.send("lead", bad, "hi")).toThrow(`Invalid mailbox recipient: ${bad}`);
      }
      expect(existsSync(path.join(workdir, ".harness"))).toBe(false);
    });

    it("keeps a torn or foreign line in <name>.rejected.jsonl, says where, and delivers the rest", () => {
      const { bus, said, workdir } = box();
      bus.send("lead", "bob", "before");
      const dir = path.join(workdir, ".harness", "mailboxes", "run1");
      const file = path.join(dir, "bob.jsonl");
      writeFileSync(file, `${readFileSync(file, "utf8")}{"from":"lead","to":"bob","cont\n`, {
        flag: "w",
      });
      writeFileSync(
        file,
        `${readFileSync(file, "utf8")}${JSON.stringify({ from: "lead", to: "bob", content: "after", type: "message", ts: 1, metadata: {} })}\n`,
      );
      expect(bus.read("bob").map((m) => m.content)).toEqual(["before", "after"]);
      expect(said.at(-1)).toBe(
        "  [bus] .harness/mailboxes/run1/bob.jsonl line 2 is not a whole message; kept in .harness/mailboxes/run1/bob.rejected.jsonl",
      );
      expect(readFileSync(path.join(dir, "bob.rejected.jsonl"), "utf8")).toBe(
        '{"from":"lead","to":"bob","cont\n',
      );
    });

    it("wait returns at once with mail, wakes on a send, and gives [] after its timeout", async () => {
      const { bus } = box();
      const started = Date.now();
      expect(await bus.wait("carol", 20)).toEqual([]);
      expect(Date.now() - started).toBeLessThan(500);
      const waiting = bus.wait("carol", 5000);
      setTimeout(() => bus.send("lead", "carol", "wake up"), 10);
      expect((await waiting).map((m) => m.content)).toEqual(["wake up"]);
      bus.send("lead", "carol", "already here");
      expect((await bus.wait("carol", 5000)).map((m) => m.content)).toEqual(["already here"]);
    });

    it("request IDs are req_ and six digits, drawn again on a collision", () => {
      const draws = [42, 42, 7];
      const p = new protocols.Protocols(() => draws.shift()!);
      const a = p.open({ type: "shutdown", sender: "lead", target: "alice", payload: "" });
      const b = p.open({ type: "shutdown", sender: "lead", target: "bob", payload: "" });
      expect([a.requestId, b.requestId]).toEqual(["req_000042", "req_000007"]);
      expect(a.status).toBe("pending");
    });

    it("a response settles its request only from the one asked, once, with the right type", () => {
      const p = new protocols.Protocols();
      const state = p.open({ type: "shutdown", sender: "lead", target: "alice", payload: "" });
      const response = (from: string, type: string, id = state.requestId) => ({
        from,
        to: "lead",
        content: "ok",
        type: type as MailboxModule.MessageType,
        ts: 0,
        metadata: { request_id: id, approve: true },
      });
      expect(p.matchResponse(response("bob", "shutdown_response"))).toBe(
        `${state.requestId} was not sent by bob to lead`,
      );
      expect(state.status).toBe("pending");
      expect(p.matchResponse(response("alice", "plan_approval_response"))).toBe(
        `plan_approval_response does not answer ${state.requestId}`,
      );
      expect(p.matchResponse(response("alice", "shutdown_response", "req_999999"))).toBe(
        "unknown request req_999999",
      );
      expect(p.matchResponse(response("alice", "shutdown_response"))).toBeNull();
      expect(state.status).toBe("approved");
      expect(p.matchResponse(response("alice", "shutdown_response"))).toBe(
        `${state.requestId} is already approved`,
      );
      // A replayed request is refused by the teammate too: it is no longer pending.
      const replay = { ...response("lead", "shutdown_request"), to: "alice" };
      expect(p.acceptShutdown(replay, "alice", false)).toBeNull();
    });

    it("formats team events one line each, with request IDs", () => {
      const m = (from: string, type: string, content: string, metadata = {}) => ({
        from,
        to: "lead",
        content,
        type: type as MailboxModule.MessageType,
        ts: 0,
        metadata,
      });
      expect(
        protocols.formatTeamEvents([
          m("alice", "result", "done"),
          m("bob", "plan_approval_request", "my plan", { request_id: "req_000123" }),
        ]),
      ).toBe(
        "[Team events]\n[result] alice: done\n[plan_approval_request request_id=req_000123] bob: my plan",
      );
    });

    it("a plan answer for an earlier assignment is refused; a forged one is ignored", () => {
      const workdir = tempWorkspace("plan");
      const taskStore = new store.TaskStore(workdir);
      const sent: MailboxModule.TeamMessage[] = [];
      const bus = new mailbox.Mailbox({ workdir, run: "r", say: () => {} });
      bus.onSend((message) => sent.push(message));
      const team = new runtime.TeamRuntime({
        workdir,
        client: null as never,
        model: "m",
        emit: () => {},
        usage: new UsageMeter(),
        store: taskStore,
        mailbox: bus,
        worktrees: new worktrees.Worktrees({ workdir, store: taskStore, say: () => {} }),
        agent: () => {
          throw new Error("no loop runs here");
        },
      });
      const mate = {
        name: "bob",
        role: "dev",
        status: "working",
        gate: "required",
        requestId: null,
        version: 0,
        assignment: null,
        messages: [],
        request: "",
        controller: new AbortController(),
        done: Promise.resolve(),
      } as TeamRuntimeModule.Teammate;
      team.teammates.set("bob", mate);
      expect(team.messages.submitPlan("bob", "plan A")).toMatch(/^Plan submitted \(req_\d{6}\)/);
      expect(team.messages.submitPlan("bob", "plan B")).toBe(
        "A plan is already waiting for review.",
      );
      const id = mate.requestId!;
      // A claim in between: the plan was for the earlier assignment.
      team.claims.claimed({ id: "task_00000001", worktree: null } as Task, "bob");
      expect(mate.gate).toBe("required");
      expect(() => team.messages.reviewPlan(id, true)).toThrow(
        `Request ${id} belongs to an earlier assignment`,
      );
      expect(() => team.messages.reviewPlan("req_000000", true)).toThrow(
        "Request req_000000 not found",
      );
      // A response nobody asked for changes nothing.
      const forged = {
        from: "lead",
        to: "bob",
        content: "sure",
        type: "plan_approval_response" as const,
        ts: 0,
        metadata: { request_id: id, approve: true },
      };
      expect(
        team.messages.protocols.planResponse(forged, {
          name: "bob",
          requestId: mate.requestId,
          version: mate.version,
          taskId: "task_00000001",
        }),
      ).toBeNull();
      expect(sent.map((m) => m.type)).toEqual(["plan_approval_request"]);
    });

    it("parses the whole porcelain listing, however long, and checks names", () => {
      const listing = Array.from(
        { length: 80 },
        (_, i) =>
          `worktree /very/long/path/to/a/checkout/number/${i}/${"x".repeat(40)}\nHEAD ${"a".repeat(40)}\nbranch refs/heads/wt/w${i}\n`,
      ).join("\n");
      expect(listing.length).toBeGreaterThan(5000);
      const entries = worktrees.parsePorcelain(listing);
      expect(entries).toHaveLength(80);
      expect(entries[79]).toEqual({
        path: `/very/long/path/to/a/checkout/number/79/${"x".repeat(40)}`,
        branch: "refs/heads/wt/w79",
      });
      for (const bad of ["../escape", ".hidden", "a..b", "", "x".repeat(65), "a/b"]) {
        expect(() => worktrees.checkWorktreeName(bad)).toThrow(worktrees.NAME_RULE);
      }
      expect(worktrees.checkWorktreeName("auth-refactor.v2")).toBe("auth-refactor.v2");
    });

    it("a failed git worktree add: a plain Git error, or a partial operation that names what is left", async () => {
      const workdir = tempWorkspace("wt-fail");
      const taskStore = new store.TaskStore(workdir);
      const task = await taskStore.create({ subject: "auth" });
      const fakeGit =
        (leave: boolean): WorktreesModule.Git =>
        async (args) => {
          if (args[0] === "rev-parse" && args[1] === "--show-toplevel")
            return { ok: true, output: workdir };
          if (args[0] === "check-ref-format") return { ok: true, output: "wt/auth" };
          if (args[0] === "rev-parse") return { ok: leave, output: "" };
          if (args[0] === "worktree" && args[1] === "list") return { ok: true, output: "" };
          return { ok: false, output: "fatal: simulated" };
        };
      const make = (leave: boolean) =>
        new worktrees.Worktrees({ workdir, store: taskStore, git: fakeGit(leave), say: () => {} });
      await expect(make(false).create("auth", task.id)).rejects.toThrow(
        "Git error: fatal: simulated",
      );
      // Simulated leftovers: the branch exists after the failed add.
      let calls = 0;
      const late: WorktreesModule.Git = async (args, cwd) => {
        if (args[0] === "rev-parse" && args[1] === "--verify")
          return { ok: calls++ > 0, output: "" };
        return fakeGit(false)(args, cwd);
      };
      const partial = new worktrees.Worktrees({
        workdir,
        store: taskStore,
        git: late,
        say: () => {},
      });
      const failure = partial.create("auth", task.id);
      await expect(failure).rejects.toThrow(/^Partial operation: git worktree add failed/);
      await expect(partial.create("auth", task.id)).rejects.toThrow(
        "Branch 'wt/auth' already exists",
      );
      const message = await make(false)
        .create("auth", task.id)
        .catch((e: Error) => e.message);
      expect(message).toContain("Git error");
      const again = await new worktrees.Worktrees({
        workdir,
        store: taskStore,
        git: async (args, cwd) => {
          if (args[0] === "rev-parse" && args[1] === "--verify") return { ok: false, output: "" };
          if (args[0] === "worktree" && args[1] === "add") return { ok: false, output: "boom" };
          if (args[0] === "worktree" && args[1] === "list") {
            return {
              ok: true,
              output: `worktree ${path.join(workdir, ".harness/worktrees/auth")}\n`,
            };
          }
          return fakeGit(false)(args, cwd);
        },
        say: () => {},
      })
        .create("auth", task.id)
        .catch((e: Error) => e.message);
      expect(again).toContain("is already registered with Git");
      expect(taskStore.load(task.id).worktree).toBeNull();
    });
  },
);

// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the rest runs on every chapter (runsEdgeCases in chapters.ts). teams.ts brings the mailbox,
// protocols, worktrees and the task store with it; permissions.ts denies a teammate's call
// that needs approval, bash.ts and tools.ts run its calls in the worktree.
const TEAMS = moduleVersions("s13", [
  ...TEAM_TS,
  "permissions.ts",
  "permission-rules.ts",
  "bash.ts",
  "tools.ts",
]);

// Each test runs its own chapter, workspace and server: they wait side by side.
// The contract, on every chapter: the lead's and a teammate's tools and prompts with team
// events as a turn of their own, the board, and a clean exit. The edge cases (spawn's
// refusals, the plan gate, the work-phase cap with a denied call, worktrees) run where
// TEAMS differ and on the newest chapter.
describe.concurrent.each(carried(chaptersFrom("s13"), TEAMS))(
  "$id teams through the chapter",
  (chapter) => {
    const edge = edgeCase(chapter, TEAMS);

    it("the lead has 25 tools and the Team section; a teammate 11 tools, its section, no Memory; events are a turn of their own", async () => {
      const steps: ScriptStep[] = [
        {
          when: (r) => isLead(r) && lastText(r) === "form a team",
          reply: reply(
            toolUse("spawn_teammate", { name: "alice", role: "tester", prompt: "Say hello." }),
          ),
        },
        {
          when: (r) => isLead(r) && results(r)[0]?.startsWith("Teammate"),
          reply: reply(text("SPAWNED")),
        },
        { when: firstOf("alice"), reply: reply(text("hello from alice")) },
        { when: events, reply: reply(toolUse("bash", { command: "rm -rf build" })) },
        { when: (r) => isLead(r) && results(r).length === 1, reply: reply(text("EVENTS SEEN")) },
      ];
      const run = await runTyped(chapter, {
        steps,
        env: TEAM,
        files: {
          ".claude/settings.json": JSON.stringify({
            hooks: {
              UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo x >> ups.txt" }] }],
            },
          }),
        },
        typing: [{ line: "form a team" }, { after: "EVENTS SEEN", line: null }],
      });
      const lead = run.requests.find(isLead)!;
      // Later chapters add their tools after these 25.
      expect(toolNames(lead).slice(0, 25)).toEqual(S13_TOOLS);
      expect(String(lead.system)).toContain(
        "Team: for work that splits into parallel parts, propose a small team (names, roles, what each does) and wait for the user's confirmation before spawn_teammate. Delegate by creating a Task per parallel change;",
      );
      expect(String(lead.system)).toContain("not a sandbox");
      expect(String(lead.system)).toContain(
        "Your task owner name is agent; teammates write to you as lead.",
      );
      const mate = run.requests.find(firstOf("alice"))!;
      expect(toolNames(mate)).toEqual(TEAMMATE_TOOLS);
      const bash = (mate.tools as Anthropic.Tool[])[0]!;
      expect(Object.keys(bash.input_schema.properties ?? {})).not.toContain("run_in_background");
      const system = String(mate.system);
      expect(system).toContain("Teammate: you are one of a team led by lead.");
      expect(system).toContain(
        "Nothing here can ask the user: ask lead for anything that needs approval.",
      );
      expect(system.endsWith("You are 'alice', a tester; your task owner name is alice.")).toBe(
        true,
      );
      for (const absent of [
        "Team:",
        "Tasks:",
        "Scheduling:",
        "Current local time",
        "Delegation:",
      ]) {
        expect(system).not.toContain(absent);
      }
      expect(mate.messages).toEqual([{ role: "user", content: "Say hello." }]);
      const turn = run.requests.find(events)!;
      expect(turn.messages.at(-1)).toEqual({
        role: "user",
        content:
          "[Team events]\n[result] alice: hello from alice\n[idle_notification] alice: Waiting for more work.",
      });
      expect(run.output).toContain("[wake: 2 team event(s) -> new turn]");
      // A team-event turn has nobody at the prompt: an approval is denied without asking.
      const denied = run.requests.filter((r) => isLead(r) && results(r).length === 1).at(-1)!;
      expect(results(denied)).toEqual([
        "Permission denied: approval needed (Potentially destructive command: rm) but a team turn cannot ask the user; an allow rule in .claude/settings.json can permit this call.",
      ]);
      expect(run.output).toContain("  [alice] hello from alice");
      // UserPromptSubmit ran for the typed line only, not for the team-event turn.
      expect(readFileSync(path.join(run.workdir, "ups.txt"), "utf8")).toBe("x\n");
      expect(run.code).toBe(0);
    });

    edge(
      "spawn refuses bad and reserved names, duplicates, a sixth teammate and an unclaimable task, leaving no registration",
      async () => {
        const spawn = (name: string, extra = {}) =>
          toolUse("spawn_teammate", { name, role: "dev", prompt: "Wait.", ...extra });
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "go",
            reply: reply(
              spawn("bad name!"),
              spawn("Lead"),
              spawn("AGENT"),
              spawn("ghost", { task_id: "task_0000dead" }),
              ...["a1", "a2", "a3", "a4", "a5"].map((n) => spawn(n)),
              spawn("A1"),
              spawn("a6"),
              toolUse("list_teammates", {}),
              toolUse("send_message", { to: "dave", content: "hi" }),
              toolUse("request_shutdown", { teammate: "dave" }),
              toolUse("request_plan", { teammate: "dave", task: "x" }),
              toolUse("review_plan", { request_id: "req_000000", approve: true }),
              toolUse("create_worktree", { name: "../escape", task_id: "task_0000dead" }),
            ),
          },
          { when: (r) => isLead(r) && results(r).length > 0, reply: reply(text("REFUSALS SEEN")) },
          ...["a1", "a2", "a3", "a4", "a5"].map((n) => ({
            when: firstOf(n),
            reply: reply(text(`${n} ready`)),
          })),
          ...noted(),
        ];
        const run = await runTyped(chapter, {
          steps,
          env: TEAM,
          typing: [{ line: "go" }, { after: "REFUSALS SEEN", line: null }],
        });
        const out = results(run.requests.find((r) => isLead(r) && results(r).length > 0)!);
        expect(out.slice(0, 4)).toEqual([
          "Error: Invalid input for spawn_teammate: name must match the pattern ^[A-Za-z0-9_-]{1,64}$",
          "Error: 'Lead' is reserved by the runtime",
          "Error: 'AGENT' is reserved by the runtime",
          "Error: Cannot spawn teammate 'ghost': Task not found: task_0000dead",
        ]);
        expect(out[4]).toBe(
          "Teammate 'a1' spawned as dev without an initial Task. End this turn; the runtime will deliver its events.",
        );
        expect(out.slice(9, 11)).toEqual([
          "Error: Teammate 'a1' already exists",
          "Error: Team is full (5 active teammates)",
        ]);
        expect(out[11]).toBe("a1: working\na2: working\na3: working\na4: working\na5: working");
        expect(out.slice(12)).toEqual([
          "Error: Teammate 'dave' is not active",
          "Error: Teammate 'dave' is not active",
          "Error: Teammate 'dave' is not active",
          "Error: Request req_000000 not found",
          "Error: Invalid input for create_worktree: name must match the pattern ^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        ]);
        expect(run.code).toBe(0);
      },
    );

    it("the board: auto-claim by priority then ID, one task per owner, completion keeps the lease; /team and /tasks release", async () => {
      const files = {
        ...taskFile("task_000000a1", { subject: "low", priority: 3 }),
        ...taskFile("task_000000b2", { subject: "mid b" }),
        ...taskFile("task_000000a2", { subject: "mid a" }),
        ...taskFile("task_000000c3", { subject: "high", priority: 9 }),
        ...taskFile("task_000000d4", {
          subject: "crashed run's",
          status: "in_progress",
          owner: "ghost",
        }),
      };
      const claimed = (id: string) => (r: Request) =>
        is("alice")(r) && lastText(r).startsWith(`[Auto-claimed task ${id}]`);
      const steps: ScriptStep[] = [
        {
          when: (r) => isLead(r) && lastText(r) === "spawn",
          reply: reply(
            toolUse("spawn_teammate", { name: "alice", role: "dev", prompt: "Work the board." }),
          ),
        },
        { when: (r) => isLead(r) && results(r).length > 0, reply: reply(text("SPAWNED")) },
        { when: firstOf("alice"), reply: reply(text("ready")) },
        {
          when: claimed("task_000000c3"),
          reply: reply(
            toolUse("claim_task", { task_id: "task_000000a1" }),
            toolUse("complete_task", { task_id: "task_000000c3" }),
            toolUse("claim_task", { task_id: "task_000000a1" }),
            toolUse("bash", { command: "echo still here" }),
          ),
        },
        { when: (r) => is("alice")(r) && results(r).length === 4, reply: reply(text("high done")) },
        { when: claimed("task_000000a2"), reply: reply(text("SECOND CLAIM")) },
        ...noted(),
      ];
      const run = await runTyped(chapter, {
        steps,
        env: TEAM,
        files,
        typing: [
          { line: "spawn" },
          { after: "SECOND CLAIM", line: "/team" },
          { after: "alice (dev)", line: "/tasks release task_000000d4" },
          { after: "Released", line: "/tasks release task_000000a2" },
          { after: "active in this run", line: null },
        ],
      });
      const round = run.requests.find((r) => is("alice")(r) && results(r).length === 4)!;
      expect(results(round)).toEqual([
        "Error: Owner alice must finish the current work turn for task_000000c3 before claiming another task",
        "Completed task_000000c3 (high)",
        "Error: Owner alice must finish the current work turn for task_000000c3 before claiming another task",
        "still here",
      ]);
      expect(run.output).toContain("[idle] alice claimed task_000000c3: high");
      expect(run.output.indexOf("claimed task_000000c3")).toBeLessThan(
        run.output.indexOf("claimed task_000000a2"),
      );
      expect(run.output).not.toContain("claimed task_000000b2");
      expect(run.output).toMatch(
        /alice \(dev\): idle, plan not_required, task task_000000a2, \d+ tokens/,
      );
      expect(run.output).toContain(
        "Released task_000000d4 (crashed run's): pending, no owner (was ghost's)",
      );
      expect(run.output).toContain(
        "Error: task_000000a2 is owned by alice, who is active in this run",
      );
      expect(readTask(run.workdir, "task_000000d4")).toMatchObject({
        status: "pending",
        owner: null,
      });
      // At exit alice's unfinished task went back to the board.
      expect(readTask(run.workdir, "task_000000a2")).toMatchObject({
        status: "pending",
        owner: null,
      });
      expect(readTask(run.workdir, "task_000000c3")).toMatchObject({
        status: "completed",
        owner: "alice",
      });
    });

    edge(
      "the plan gate blocks bash and writes until approved, not reads; completion waits for the plan",
      async () => {
        const files = {
          ...taskFile("task_0000beef", { subject: "careful" }),
          "notes.txt": "read me\n",
        };
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "plan first",
            reply: reply(
              toolUse("spawn_teammate", {
                name: "bob",
                role: "dev",
                prompt: "Do it.",
                task_id: "task_0000beef",
                require_plan: true,
              }),
            ),
          },
          {
            when: (r) => isLead(r) && results(r).length > 0 && !events(r),
            reply: reply(text("ok")),
          },
          {
            when: firstOf("bob"),
            reply: reply(
              toolUse("bash", { command: "echo hi" }),
              toolUse("write_file", { path: "x.txt", content: "x" }),
              toolUse("read_file", { path: "notes.txt" }),
              toolUse("complete_task", { task_id: "task_0000beef" }),
              toolUse("submit_plan", { plan: "write x.txt" }),
            ),
          },
          { when: (r) => is("bob")(r) && results(r).length === 5, reply: reply(text("waiting")) },
          {
            when: (r) => events(r) && lastText(r).includes("plan_approval_request"),
            reply: (r) =>
              reply(
                toolUse("review_plan", {
                  request_id: /request_id=(req_\d+)/.exec(lastText(r))![1],
                  approve: true,
                }),
              ),
          },
          {
            when: (r) => is("bob")(r) && lastText(r).startsWith("[Plan approved]"),
            reply: reply(
              toolUse("write_file", { path: "x.txt", content: "x" }),
              toolUse("complete_task", { task_id: "task_0000beef" }),
            ),
          },
          { when: (r) => is("bob")(r) && results(r).length === 2, reply: reply(text("BOB DONE")) },
          ...noted(),
        ];
        const run = await runTyped(chapter, {
          steps,
          env: TEAM,
          files,
          typing: [{ line: "plan first" }, { after: "BOB DONE", line: null }],
        });
        const first = run.requests.find((r) => is("bob")(r) && results(r).length === 5)!;
        const blocked =
          "Blocked: plan status is required. Submit or revise the plan and wait for approval before changing the workspace.";
        expect(results(first).slice(0, 4)).toEqual([
          blocked,
          blocked,
          "read me",
          "Error: Task task_0000beef cannot complete while plan status is required",
        ]);
        expect(results(first)[4]).toMatch(
          /^Plan submitted \(req_\d{6}\)\. Wait for Lead's decision\.$/,
        );
        expect(run.requests.find(firstOf("bob"))!.messages[0]!.content).toBe(
          `Do it.\n\n[Assigned task task_0000beef] careful\nWork directory: ${run.workdir}\n\n[Plan required] Submit a plan and wait for Lead approval before changing files or using bash.`,
        );
        // No result event while the plan waited: the lead first heard of bob through his plan.
        const firstEvents = lastText(run.requests.find(events)!);
        expect(firstEvents).toMatch(
          /^\[Team events\]\n\[plan_approval_request request_id=req_\d+\] bob: write x\.txt$/,
        );
        expect(readFileSync(path.join(run.workdir, "x.txt"), "utf8")).toBe("x");
        expect(readTask(run.workdir, "task_0000beef")).toMatchObject({
          status: "completed",
          owner: "bob",
        });
      },
    );

    edge(
      "the plan gate and the lease read what a call touches (its target), not the tool's name",
      async () => {
        const [{ runHarness }, { teamsMechanism }] = await Promise.all([
          importChapter<typeof HarnessModule>(chapter, "harness.ts"),
          importChapter<typeof TeamsModule>(chapter, "teams.ts"),
        ]);
        // Two tools the team has never heard of, given to teammates by another mechanism.
        const seen: string[] = [];
        const probe = (name: string, kind: "read" | "write") => ({
          name,
          aliases: [],
          description: name,
          input_schema: { type: "object" as const, properties: {} },
          parse: () => ({ ok: true as const, value: {} }),
          run: async (_input: unknown, context: { workdir: string }) => {
            seen.push(`${name} in ${context.workdir}`);
            return { content: `${name} ran` };
          },
          target: () => ({ kind, path: "probe.txt" }),
        });
        const main: Main = (io) =>
          runHarness(io, { id: chapter.id, title: "targets" }, main, (harness) => [
            {
              name: "probes",
              tools: (role) =>
                role === "teammate" ? [probe("stamp", "write"), probe("peek", "read")] : [],
            },
            teamsMechanism(harness),
          ]);
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "go",
            reply: reply(
              toolUse("spawn_teammate", {
                name: "erin",
                role: "dev",
                prompt: "Try.",
                task_id: "task_0000e1e1",
                require_plan: true,
              }),
            ),
          },
          {
            when: (r) => isLead(r) && results(r).length > 0 && !events(r),
            reply: reply(text("ok")),
          },
          { when: firstOf("erin"), reply: reply(toolUse("stamp", {}), toolUse("peek", {})) },
          {
            when: (r) => is("erin")(r) && results(r).length === 2,
            reply: reply(text("ERIN DONE")),
          },
          ...noted(),
        ];
        const run = await runTyped(chapter, {
          main,
          steps,
          env: TEAM,
          files: taskFile("task_0000e1e1", { subject: "probe" }),
          typing: [{ line: "go" }, { after: "ERIN DONE", line: null }],
        });
        const answered = run.requests.find((r) => is("erin")(r) && results(r).length === 2)!;
        expect(results(answered)).toEqual([
          "Blocked: plan status is required. Submit or revise the plan and wait for approval before changing the workspace.",
          "peek ran",
        ]);
        expect(seen).toEqual([`peek in ${run.workdir}`]);
      },
    );

    // The cap is one module's constant: its many model calls run where that module differs.
    edge(
      "a denied call reaches the lead; a phase stops after 50 model calls and its task goes back to the board",
      async () => {
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "loop",
            reply: reply(
              toolUse("spawn_teammate", {
                name: "carol",
                role: "dev",
                prompt: "Go.",
                task_id: "task_0000c0de",
              }),
            ),
          },
          {
            when: (r) => isLead(r) && results(r).length > 0 && !events(r),
            reply: reply(text("ok")),
          },
          { when: firstOf("carol"), reply: reply(toolUse("bash", { command: "rm -rf build" })) },
          // A call that starts no process: the phase cap counts model calls, not commands.
          ...Array.from({ length: 49 }, () => ({
            when: is("carol"),
            reply: reply(toolUse("read_file", { path: "notes.txt" })),
          })),
          ...Array.from({ length: 6 }, () => ({ when: events, reply: reply(text("LEAD TOLD")) })),
        ];
        const run = await runTyped(chapter, {
          steps,
          env: TEAM,
          files: { ...taskFile("task_0000c0de", { subject: "endless" }), "notes.txt": "n\n" },
          typing: [{ line: "loop" }, { after: "[teammate] carol finished", line: null }],
          // Fifty model calls in a row: on a loaded machine that takes longer than most runs.
          limitMs: 40000,
        });
        const carol = run.requests.filter(is("carol"));
        expect(carol).toHaveLength(50);
        expect(results(carol[1]!)).toEqual([DENIED_RM]);
        const told = run.requests.filter(events).map(lastText).join("\n");
        expect(told).toContain(
          '[permission_denied] carol: bash({"command":"rm -rf build"}) needs approval (Potentially destructive command: rm); run it or add an allow rule.',
        );
        expect(run.output).toContain(`  [carol] [denied] ${DENIED_RM}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(run.output).toContain("[release] endless -> pending (was carol's)");
        expect(readTask(run.workdir, "task_0000c0de")).toMatchObject({
          status: "pending",
          owner: null,
        });
      },
      45000,
    );

    it("exit stops a working teammate: its command killed, its task back on the board, no lock, whole mailbox lines; hooks name it", async () => {
      const workdir = tempWorkspace("team-exit");
      const steps: ScriptStep[] = [
        {
          when: (r) => isLead(r) && lastText(r) === "start",
          reply: reply(
            toolUse("spawn_teammate", {
              name: "dave",
              role: "dev",
              prompt: "Sleep.",
              task_id: "task_0000da7e",
            }),
            // dave read his inbox as he started; this waits there, unread, until the exit.
            toolUse("send_message", { to: "dave", content: "hold on" }),
          ),
        },
        { when: (r) => isLead(r) && results(r).length > 0, reply: reply(text("STARTED")) },
        daveSleeps,
      ];
      const stdin = new PassThrough();
      stdin.write("start\n");
      const pending = runChapter(chapter, {
        steps,
        env: TEAM,
        workdir,
        stdin,
        files: {
          ...taskFile("task_0000da7e", { subject: "sleepy" }),
          ".claude/settings.json": JSON.stringify({
            hooks: {
              PreToolUse: [
                {
                  matcher: "Bash",
                  hooks: [{ type: "command", command: "cat >> hook.json; echo >> hook.json" }],
                },
              ],
            },
          }),
        },
      });
      const pid = await waitForPid(path.join(workdir, "sleep.pid"));
      stdin.end();
      const started = Date.now();
      const run = await pending;
      expect(Date.now() - started).toBeLessThan(3000);
      expect(run.code).toBe(0);
      expect(await endsWithin(pid, 2000)).toBe(true);
      expect(readTask(workdir, "task_0000da7e")).toMatchObject({ status: "pending", owner: null });
      expect(existsSync(path.join(workdir, ".harness", "tasks", ".lock"))).toBe(false);
      // The unread message is still there, one whole line: nothing half-written, nothing lost.
      expect(mailboxLines(workdir)).toEqual([
        expect.objectContaining({ from: "lead", to: "dave", content: "hold on", type: "message" }),
      ]);
      const hook = JSON.parse(readFileSync(path.join(workdir, "hook.json"), "utf8").trim());
      expect(hook).toMatchObject({
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        agent_name: "dave",
      });
    });

    // With MCP (s14 on): a mechanism listed before the team and the servers fails to close.
    if (Number(chapter.id.slice(1)) >= 14) {
      it("a close that throws leaves no teammate's command and no MCP server running", async () => {
        const [{ runHarness }, { bashMechanism }, { teamsMechanism }, { mcpMechanism }] =
          await Promise.all([
            importChapter<typeof HarnessModule>(chapter, "harness.ts"),
            importChapter<typeof BashModule>(chapter, "bash.ts"),
            importChapter<typeof TeamsModule>(chapter, "teams.ts"),
            importChapter<typeof McpModule>(chapter, "mcp.ts"),
          ]);
        const main: Main = (io) =>
          runHarness(io, { id: chapter.id, title: "close" }, main, (harness) => [
            bashMechanism(harness),
            {
              name: "broken",
              close: () => {
                throw new Error("its lock file is gone");
              },
            },
            teamsMechanism(harness),
            mcpMechanism(harness),
          ]);
        const workdir = tempWorkspace("team-close");
        const server = path.join(chapterDir(chapter), "servers", "course-mcp.mjs");
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "start",
            reply: reply(
              toolUse("connect_mcp", { name: "docs" }),
              toolUse("spawn_teammate", {
                name: "dave",
                role: "dev",
                prompt: "Sleep.",
                task_id: "task_0000da7e",
              }),
            ),
          },
          { when: (r) => isLead(r) && results(r).length > 0, reply: reply(text("STARTED")) },
          daveSleeps,
        ];
        const stdin = new PassThrough();
        stdin.write("start\n");
        const pending = runChapter(chapter, {
          main,
          steps,
          env: TEAM,
          workdir,
          stdin,
          files: {
            ...taskFile("task_0000da7e", { subject: "sleepy" }),
            ".mcp.json": JSON.stringify({
              mcpServers: {
                docs: {
                  command: "node",
                  args: [server, "docs", "--pidfile", path.join(workdir, "docs.pid")],
                },
              },
            }),
          },
        });
        const sleeping = await waitForPid(path.join(workdir, "sleep.pid"));
        const docs = await waitForPid(path.join(workdir, "docs.pid"));
        stdin.end();
        const run = await pending;
        expect(run.output).toContain("[broken] could not close: its lock file is gone");
        expect(await endsWithin(sleeping, 2000)).toBe(true);
        expect(await endsWithin(docs, 2000)).toBe(true);
        expect(run.code).toBe(0);
      });
    }

    edge(
      "a claim in the middle of a reply moves the calls after it into the task's checkout",
      async () => {
        const workdir = tempWorkspace("team-wt-claim");
        gitRepo(workdir);
        writeFiles(workdir, taskFile("task_000b0001", { subject: "auth" }));
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "go",
            reply: reply(
              toolUse("create_worktree", { name: "auth", task_id: "task_000b0001" }),
              toolUse("spawn_teammate", { name: "finn", role: "dev", prompt: "Find work." }),
            ),
          },
          { when: (r) => isLead(r) && results(r).length === 2, reply: reply(text("SPAWNED")) },
          {
            when: firstOf("finn"),
            reply: reply(
              toolUse("bash", { command: "pwd" }),
              toolUse("claim_task", { task_id: "task_000b0001" }),
              toolUse("bash", { command: "pwd" }),
            ),
          },
          {
            when: (r) => is("finn")(r) && results(r).length === 3,
            reply: reply(text("FINN DONE")),
          },
          ...noted(),
        ];
        const run = await runTyped(chapter, {
          steps,
          env: TEAM,
          workdir,
          typing: [{ line: "go" }, { after: "FINN DONE", line: null }],
        });
        const finn = results(run.requests.find((r) => is("finn")(r) && results(r).length === 3)!);
        // Before the claim no task, so no workspace tools; after it, the checkout.
        expect(finn[0]).toBe("Error: Claim a Task before using workspace tools.");
        expect(finn[1]).toMatch(/^Claimed task_000b0001/);
        expect(finn[2]).toBe(path.join(workdir, ".harness", "worktrees", "auth"));
      },
    );

    edge(
      "worktrees: bound to a task, the owner works in the checkout, removal is the user's and keeps the branch",
      async () => {
        const workdir = tempWorkspace("team-wt");
        const git = gitRepo(workdir);
        git("branch", "wt/taken");
        writeFiles(workdir, {
          ...taskFile("task_000a0001", { subject: "auth" }),
          ...taskFile("task_000a0002", {
            subject: "claimed",
            status: "in_progress",
            owner: "agent",
          }),
          ...taskFile("task_000a0003", { subject: "other" }),
        });
        const steps: ScriptStep[] = [
          {
            when: (r) => isLead(r) && lastText(r) === "worktree",
            reply: reply(
              toolUse("create_worktree", { name: "auth", task_id: "task_000a0001" }),
              toolUse("create_worktree", { name: "busy", task_id: "task_000a0002" }),
              toolUse("create_worktree", { name: "taken", task_id: "task_000a0003" }),
              toolUse("create_worktree", { name: "auth", task_id: "task_000a0003" }),
              toolUse("spawn_teammate", {
                name: "erin",
                role: "dev",
                prompt: "Fix auth.",
                task_id: "task_000a0001",
              }),
              toolUse("list_tasks", {}),
            ),
          },
          { when: (r) => isLead(r) && results(r).length === 6, reply: reply(text("BOUND")) },
          {
            when: firstOf("erin"),
            reply: reply(
              toolUse("write_file", { path: "auth.txt", content: "fixed\n" }),
              toolUse("bash", { command: "pwd" }),
              toolUse("complete_task", { task_id: "task_000a0001" }),
            ),
          },
          {
            when: (r) => is("erin")(r) && results(r).length === 3,
            reply: reply(text("ERIN DONE")),
          },
          ...noted(),
        ];
        const run = await runTyped(chapter, {
          steps,
          env: TEAM,
          workdir,
          typing: [
            { line: "worktree" },
            { after: "ERIN DONE", line: "/worktree remove auth" },
            { after: "uncommitted", line: "/worktree remove auth --discard" },
            { after: "retained", line: null },
          ],
          limitMs: 15000,
        });
        const lead = results(run.requests.find((r) => isLead(r) && results(r).length === 6)!);
        expect(lead[0]).toBe(
          "Created worktree 'auth' at .harness/worktrees/auth on branch wt/auth for task_000a0001",
        );
        expect(lead.slice(1, 4)).toEqual([
          "Error: Task task_000a0002 must be pending and unowned to bind a worktree",
          "Error: Branch 'wt/taken' already exists",
          "Error: Worktree 'auth' is already bound to task_000a0001",
        ]);
        expect(lead[5]).toContain("task_000a0001 (p5): auth [in_progress] [erin] (worktree: auth)");
        const checkout = path.join(workdir, ".harness", "worktrees", "auth");
        const erin = results(run.requests.find((r) => is("erin")(r) && results(r).length === 3)!);
        expect(erin[1]).toBe(checkout);
        expect(existsSync(path.join(workdir, "auth.txt"))).toBe(false);
        expect(run.requests.find(firstOf("erin"))!.messages[0]!.content).toContain(
          `Work directory: ${checkout}`,
        );
        expect(run.output).toContain(
          "Error: worktree 'auth' has 1 uncommitted change(s); preserve or discard them manually",
        );
        expect(run.output).toContain("Worktree 'auth' removed; branch 'wt/auth' retained");
        expect(existsSync(checkout)).toBe(false);
        expect(git("branch", "--list", "wt/auth").trim()).toBe("wt/auth");
        expect(readTask(workdir, "task_000a0001")).toMatchObject({
          status: "completed",
          worktree: null,
        });
      },
    );
  },
);
