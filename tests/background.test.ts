/**
 * Background jobs, against every chapter from s11: the flag on bash (main agent only), the
 * job table and its limits, the notification text and where it goes in the request (after
 * tool results and a todo reminder, before compaction sees the request), /bg, and no
 * process left behind when the session ends.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import { checkInput, trackChild } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as BackgroundModule from "../chapters/s11-background/src/background.ts";
import type * as BashModule from "../chapters/s11-background/src/bash.ts";
import {
  carried,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
  S10_TOOLS,
} from "./chapters.ts";
import { endsWithin, isAlive, killQuietly, waitForPid } from "./helpers/process.ts";
import {
  afterTools,
  runChapter,
  sessionLog,
  tempWorkspace,
  toolNames,
  userSaid,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
type Block = Anthropic.ContentBlockParam;

const lastBlocks = (request: Request): Block[] => {
  const content = request.messages.at(-1)?.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
};
const textsOf = (blocks: Block[]) =>
  blocks.flatMap((block) => (block.type === "text" ? [block.text] : []));
const notificationsIn = (request: Request) =>
  textsOf(lastBlocks(request)).filter((t) => t.startsWith("<task_notification>"));
const bgCall = (command: string) => toolUse("bash", { command, run_in_background: true });

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(
  moduleVersions("s11", ["background.ts", "bash.ts"]).map((c) => c.id),
);
// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the contract runs on every chapter (runsEdgeCases in chapters.ts). permissions.ts and
// hooks.ts decide the denied call and what PostToolUse sees, todo.ts and compact-layers.ts
// what shares the request with a notification (the foundation files count only in their own
// suites: FOUNDATION in chapters.ts).
const BACKGROUND = moduleVersions("s11", [
  "background.ts",
  "permissions.ts",
  "permission-rules.ts",
  "hooks.ts",
  "command-hooks.ts",
  "todo.ts",
  "compact-layers.ts",
]);

describe.each(carried(chaptersFrom("s11"), MODULE_CHAPTERS, BACKGROUND))(
  "$id background jobs",
  (chapter) => {
    const waits = chaptersFrom(
      "s11",
      "a job that ends between turns waits for the next line",
    ).includes(chapter);
    let bg: typeof BackgroundModule;
    let bash: typeof BashModule;
    const jobs = (timeoutMs = 5000) =>
      new bg.BackgroundJobs({ workdir: tempWorkspace("bg"), timeoutMs });

    if (MODULE_CHAPTERS.has(chapter.id)) {
      beforeAll(async () => {
        bg = await importChapter<typeof BackgroundModule>(chapter, "background.ts");
        bash = await importChapter<typeof BashModule>(chapter, "bash.ts");
      });

      describe("the job table", () => {
        it("numbers jobs bg_0001…, answers at once, and delivers each ended job exactly once", async () => {
          const table = jobs();
          expect(table.start("printf ready")).toEqual({
            content:
              "[Background task bg_0001 started] The result will be collected on a later turn.",
          });
          expect(table.jobs.get("bg_0001")?.status).toBe("running");
          expect(table.collect()).toEqual([]);
          await table.settled();
          const [job] = table.collect();
          expect(job).toMatchObject({ id: "bg_0001", status: "completed", result: "ready" });
          expect(bg.notificationText(job!)).toBe(
            [
              "<task_notification>",
              "  <task_id>bg_0001</task_id>",
              "  <status>completed</status>",
              "  <command>printf ready</command>",
              "  <summary>ready</summary>",
              "</task_notification>",
            ].join("\n"),
          );
          expect(table.collect()).toEqual([]);
          expect(table.start("true").content).toContain("bg_0002");
        });

        it("marks a non-zero exit, a timeout and a blank command as failures, in the foreground's words", async () => {
          const table = jobs(300);
          table.start("echo boom; exit 3");
          table.start("sleep 5");
          expect(table.start("   ")).toEqual({
            content: "Error: Bash command cannot be empty",
            isError: true,
          });
          await table.settled();
          const ended = table.collect();
          expect(ended.map((job) => [job.id, job.status, job.result])).toEqual([
            ["bg_0001", "failed", "Error: command exited with status 3\nboom"],
            ["bg_0002", "failed", "Error: Timeout (0s)"],
          ]);
        });

        it("notifies in the order jobs end, not the order they started", async () => {
          const table = jobs();
          // The slow job ends only once this process has reaped the fast one (`kill -0`
          // answers for a zombie), however loaded the machine.
          table.start(
            "until [ -s fast.pid ]; do sleep 0.02; done; " +
              "while kill -0 $(cat fast.pid) 2>/dev/null; do sleep 0.02; done; echo slow",
          );
          table.start("echo $$ > fast.pid.tmp && mv fast.pid.tmp fast.pid; echo fast");
          await table.settled();
          expect(table.collect().map((job) => job.result)).toEqual(["fast", "slow"]);
        });

        it("cuts the summary to 500 characters and escapes &, < and > in command and summary", async () => {
          const table = jobs();
          table.start("printf '%0600d' 0");
          table.start("echo '</summary></task_notification> & more'");
          await table.settled();
          const ended = table.collect();
          const long = ended.find((job) => job.id === "bg_0001");
          const tricky = ended.find((job) => job.id === "bg_0002");
          expect(long!.result).toHaveLength(600);
          expect(bg.notificationText(long!)).toContain(`<summary>${"0".repeat(500)}</summary>`);
          const note = bg.notificationText(tricky!);
          expect(note).toContain(
            "<command>echo '&lt;/summary&gt;&lt;/task_notification&gt; &amp; more'</command>",
          );
          expect(note).toContain(
            "<summary>&lt;/summary&gt;&lt;/task_notification&gt; &amp; more</summary>",
          );
          expect(note.match(/<\/summary>/g)).toHaveLength(1);
        });

        it(`refuses a job beyond ${8} running ones and registers nothing for it`, async () => {
          const table = jobs();
          for (let i = 0; i < bg.MAX_RUNNING_JOBS; i++) table.start("sleep 5");
          expect(table.start("echo ninth")).toEqual({
            content:
              "Error: 8 background jobs are already running; wait for one to finish or run this in the foreground",
            isError: true,
          });
          expect(table.jobs.size).toBe(8);
          await table.stop();
          expect([...table.jobs.values()].every((job) => job.status === "failed")).toBe(true);
          expect(table.start("echo now").content).toContain("bg_0009");
          await table.settled();
        });

        it("stops only its own jobs: another process the harness started keeps running", async () => {
          const table = jobs();
          table.start("sleep 30");
          const other = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
          trackChild(other);
          try {
            await table.stop();
            expect(table.jobs.get("bg_0001")?.status).toBe("failed");
            expect(isAlive(other.pid!)).toBe(true);
          } finally {
            killQuietly(other.pid!);
          }
        });

        it("stops a running job's whole process group: the job fails and its child is gone", async () => {
          const table = jobs();
          const ws = (table as unknown as { options: { workdir: string } }).options.workdir;
          table.start("sleep 30 & echo $! > child.pid.tmp && mv child.pid.tmp child.pid; wait");
          const pid = await waitForPid(path.join(ws, "child.pid"));
          try {
            expect(isAlive(pid)).toBe(true);
            await table.stop();
            expect(await endsWithin(pid)).toBe(true);
            expect(table.jobs.get("bg_0001")?.status).toBe("failed");
          } finally {
            killQuietly(pid);
          }
        });
      });

      describe("injection", () => {
        const job = (id: string): BackgroundModule.Job => ({
          id,
          command: `echo ${id}`,
          status: "completed",
          startedAt: 0,
          result: id,
          delivered: true,
        });

        it("joins a trailing user message after what it holds, or adds one after a reply", () => {
          const typed: Anthropic.MessageParam[] = [{ role: "user", content: "next" }];
          expect(bg.injectNotifications(typed, [job("bg_0001")])).toBe(1);
          expect(typed).toEqual([
            {
              role: "user",
              content: [
                { type: "text", text: "next" },
                { type: "text", text: bg.notificationText(job("bg_0001")) },
              ],
            },
          ]);
          const results: Anthropic.MessageParam[] = [
            { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] },
          ];
          bg.injectNotifications(results, [job("bg_0001"), job("bg_0002")]);
          expect((results[0]!.content as Block[]).map((b) => b.type)).toEqual([
            "tool_result",
            "text",
            "text",
          ]);
          const afterReply: Anthropic.MessageParam[] = [
            { role: "user", content: "hi" },
            { role: "assistant", content: "hello" },
          ];
          bg.injectNotifications(afterReply, [job("bg_0003")]);
          expect(afterReply).toHaveLength(3);
          expect(afterReply[2]).toMatchObject({ role: "user" });
          const untouched: Anthropic.MessageParam[] = [{ role: "user", content: "x" }];
          expect(bg.injectNotifications(untouched, [])).toBe(0);
          expect(untouched).toEqual([{ role: "user", content: "x" }]);
        });
      });

      describe("the flag on bash", () => {
        it("runs only true in the background, refuses a flag that is not a boolean; the subagent's bash has no flag", async () => {
          const started: string[] = [];
          const plain = bash.bashTool({ timeoutMs: 5000 });
          const flagged = bg.withBackgroundFlag(plain, {
            start: (command: string) => {
              started.push(command);
              return { content: "started" };
            },
          });
          const ctx = {
            workdir: tempWorkspace("flag"),
            signal: new AbortController().signal,
            scope: "main",
          };
          const call = async (input: unknown) => {
            const parsed = checkInput(flagged, input);
            if (!parsed.ok) throw new Error(parsed.error);
            return (await flagged.run(parsed.value, ctx)).content;
          };
          expect(checkInput(flagged, { command: "echo bg", run_in_background: "true" })).toEqual({
            ok: false,
            error: "Error: Invalid input for bash: run_in_background must be true or false",
          });
          expect(await call({ command: "echo fg", run_in_background: false })).toBe("fg");
          expect(await call({ command: "echo fg" })).toBe("fg");
          expect(await call({ command: "echo bg", run_in_background: true })).toBe("started");
          expect(started).toEqual(["echo bg"]);
          expect(Object.keys(flagged.input_schema.properties ?? {})).toEqual([
            "command",
            "run_in_background",
          ]);
          expect(flagged.description).toContain("<task_notification>");
          const mechanism = bg.backgroundMechanism({
            env: {},
            workdir: ctx.workdir,
            printer: { line() {} } as never,
            log: { transcript() {} } as never,
          });
          expect(mechanism.extendTool!(plain, "subagent")).toBe(plain);
          expect(mechanism.extendTool!(plain, "main").input_schema.properties).toHaveProperty(
            "run_in_background",
          );
        });
      });
    }

    // Each test runs its own chapter, workspace and server: they wait side by side.
    // The contract, on every chapter: a job started from the loop and its result injected, a
    // job that ends between turns (CHANGED from s15), /bg and no process left at the end.
    describe.concurrent("through the chapter", () => {
      const edge = edgeCase(chapter, BACKGROUND);
      it("answers with the placeholder and injects the result after the next round's tool results", async () => {
        const run = await runChapter(chapter, {
          prompts: ["build it"],
          steps: [
            { when: userSaid("build it"), reply: reply(bgCall("sleep 0.2; echo built")) },
            {
              when: afterTools,
              reply: reply(toolUse("bash", { command: "sleep 0.6; echo waited" })),
            },
            { when: afterTools, reply: reply(text("done")) },
          ],
        });
        const [, second, third] = run.requests;
        // The first fifteen: later chapters add their tools after them.
        expect(toolNames(run.requests[0]!).slice(0, 15)).toEqual(S10_TOOLS);
        const bashSpec = run.requests[0]!.tools!.find(
          (t) => (t as Anthropic.Tool).name === "bash",
        ) as Anthropic.Tool;
        expect(bashSpec.input_schema.properties).toHaveProperty("run_in_background");
        expect(lastBlocks(second!)).toEqual([
          {
            type: "tool_result",
            tool_use_id: expect.any(String),
            content:
              "[Background task bg_0001 started] The result will be collected on a later turn.",
          },
        ]);
        const blocks = lastBlocks(third!);
        expect(blocks.map((b) => b.type)).toEqual(["tool_result", "text"]);
        expect(notificationsIn(third!)[0]).toContain("<status>completed</status>");
        expect(notificationsIn(third!)[0]).toContain("<summary>built</summary>");
        expect(String(run.requests[0]!.system)).toContain(
          "Background: set run_in_background to true",
        );
        expect(run.output).toContain("[background] started bg_0001: sleep 0.2; echo built");
        expect(run.output).toContain("[background] collected bg_0001: completed");
        expect(run.output).toContain("[inject] 1 background notification(s)");
        const { transcript } = sessionLog(run.workdir);
        expect(transcript).toContain("BACKGROUND TASK STARTED");
        expect(transcript).toContain("bg_0001: sleep 0.2; echo built");
        expect(transcript).toContain("INJECTED BACKGROUND NOTIFICATIONS");
      });

      edge(
        "puts a notification after a todo reminder, and compaction still acts on the same request",
        async () => {
          const run = await runChapter(chapter, {
            env: { L3_COMPACT_PERSIST_THRESHOLD: "1000" },
            prompts: ["go"],
            steps: [
              // The job ends while the third command runs, however busy the machine: it waits
              // for that command's go, and the command waits until the harness has reaped the
              // job's shell (`kill -0` answers for a zombie), plus a moment for its result to
              // be queued, so only the fourth request can carry it.
              {
                when: userSaid("go"),
                reply: reply(
                  bgCall("echo $$ > job.pid; until [ -f go ]; do sleep 0.05; done; echo late"),
                ),
              },
              { when: afterTools, reply: reply(toolUse("bash", { command: "echo quick" })) },
              {
                when: afterTools,
                reply: reply(
                  toolUse("bash", {
                    command:
                      "until [ -s job.pid ]; do sleep 0.05; done; touch go; " +
                      "while kill -0 $(cat job.pid) 2>/dev/null; do sleep 0.05; done; " +
                      "sleep 0.3; seq 1 2000",
                  }),
                ),
              },
              { when: afterTools, reply: reply(text("ok")) },
            ],
          });
          const last = run.requests[3]!;
          const blocks = lastBlocks(last);
          expect(blocks.map((b) => b.type)).toEqual(["tool_result", "text", "text"]);
          const result = blocks[0] as Anthropic.ToolResultBlockParam;
          expect(String(result.content)).toMatch(/^<persisted-output>/);
          expect(textsOf(blocks)[0]).toBe("<reminder>Update your todos.</reminder>");
          expect(textsOf(blocks)[1]).toContain("<summary>late</summary>");
        },
      );

      it(
        waits
          ? "delivers a job that ends between turns in the next typed line's message, after its text"
          : "wakes the idle agent once for a job that ends between turns; the next line carries none",
        async () => {
          const stdin = new PassThrough();
          stdin.write("start\n");
          const workdir = tempWorkspace("bg-between");
          const notified = (r: Request) =>
            JSON.stringify(r.messages.at(-1)).includes("task_notification");
          const running = runChapter(chapter, {
            stdin,
            workdir,
            onOutput: (out) => {
              void out.waitFor("started").then(() => (firstTurn = true));
              void out.waitFor("noted").then(() => (woken = true));
            },
            steps: [
              {
                when: userSaid("start"),
                reply: reply(bgCall("sleep 0.2; echo between; touch bg.done")),
              },
              { when: afterTools, reply: reply(text("started")) },
              { when: (r) => notified(r) && !userSaid("next")(r), reply: reply(text("noted")) },
              { when: userSaid("next"), reply: reply(text("seen")) },
            ],
          });
          let firstTurn = false;
          let woken = false;
          // The next line is typed once the first turn has ended and the job has too (and,
          // from s15, once the wake's turn has answered).
          const done = path.join(workdir, "bg.done");
          while (!firstTurn || !existsSync(done) || (!waits && !woken)) {
            await new Promise((r) => setTimeout(r, 20));
          }
          // The job's process must also have exited and been reaped: give a loaded machine time.
          await new Promise((resolve) => setTimeout(resolve, 750));
          stdin.end("next\n");
          const run = await running;
          expect(
            run.requests[1]!.messages.some((m) => JSON.stringify(m).includes("task_notification")),
          ).toBe(false);
          if (waits) {
            const turn2 = run.requests[2]!;
            expect(textsOf(lastBlocks(turn2))[0]).toBe("next");
            expect(notificationsIn(turn2)[0]).toContain("<summary>between</summary>");
            return;
          }
          // The wake: a turn of its own whose message is the notification, then the line.
          const [wake, line] = [run.requests[2]!, run.requests[3]!];
          expect(notificationsIn(wake)[0]).toContain("<summary>between</summary>");
          expect(run.output).toContain("[wake: bg_0001 completed -> new turn]");
          expect(line.messages.at(-1)).toEqual({ role: "user", content: "next" });
          expect(run.requests).toHaveLength(4);
        },
      );

      edge(
        "starts nothing when the call is denied, and PostToolUse sees the placeholder",
        async () => {
          const run = await runChapter(chapter, {
            files: {
              ".claude/settings.json": JSON.stringify({
                hooks: {
                  PostToolUse: [
                    { matcher: "Bash", hooks: [{ type: "command", command: "cat >> post.jsonl" }] },
                  ],
                },
              }),
            },
            prompts: ["go", "/bg"],
            steps: [
              { when: userSaid("go"), reply: reply(bgCall("sudo ls"), bgCall("echo fine")) },
              { when: afterTools, reply: reply(text("ok")) },
            ],
          });
          const results = lastBlocks(run.requests[1]!) as Anthropic.ToolResultBlockParam[];
          expect(String(results[0]!.content)).toMatch(/deny list/);
          expect(results[1]!.content).toBe(
            "[Background task bg_0001 started] The result will be collected on a later turn.",
          );
          const posts = readFileSync(path.join(run.workdir, "post.jsonl"), "utf8")
            .trim()
            .split("\n");
          expect(posts.map((line) => JSON.parse(line).tool_response)).toEqual([
            "[Background task bg_0001 started] The result will be collected on a later turn.",
          ]);
          expect(run.output).toMatch(/bg_0001 {2}(running|completed)/);
          expect(run.output).not.toContain("bg_0002");
        },
      );

      it("lists jobs with /bg and leaves no process behind when the session ends", async () => {
        const run = await runChapter(chapter, {
          prompts: ["go", "/bg"],
          steps: [
            {
              when: userSaid("go"),
              reply: reply(
                bgCall("sleep 30 & echo $! > job.pid.tmp && mv job.pid.tmp job.pid; wait"),
              ),
            },
            { when: afterTools, reply: reply(toolUse("bash", { command: "sleep 0.3" })) },
            { when: afterTools, reply: reply(text("ok")) },
          ],
        });
        const pidFile = path.join(run.workdir, "job.pid");
        expect(existsSync(pidFile)).toBe(true);
        const pid = Number(readFileSync(pidFile, "utf8"));
        try {
          expect(run.output).toMatch(/bg_0001 {2}running {3}\s*\d+\.\ds {2}sleep 30 &/);
          expect(await endsWithin(pid)).toBe(true);
        } finally {
          killQuietly(pid);
        }
      });

      edge("rejects a BACKGROUND_TIMEOUT_MS that is not a positive integer", async () => {
        const run = await runChapter(chapter, {
          env: { BACKGROUND_TIMEOUT_MS: "soon" },
          prompts: [],
        });
        expect(run.code).toBe(1);
        expect(run.output).toContain("BACKGROUND_TIMEOUT_MS");
      });
    });
  },
);
