/**
 * The task system, against every chapter from s10: the store's files (one pretty JSON file
 * per task, created on the first create only, unknown keys kept, corrupt and foreign files
 * reported and never rewritten, the workspace escape check), the graph rules (two-phase
 * edges checked whole, cycles, the claim gate, exactly what a completion unblocks), the
 * cross-process lock (busy, stale, two processes racing one claim) and the wiring through
 * the chapter: the fifteen tools, the Tasks section, `/tasks`, the transition lines.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { checkInput, type LoopEvent, type ToolDefinition, type ToolOutput } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Task } from "../chapters/s10-tasks/src/task-record.ts";
import type * as TasksModule from "../chapters/s10-tasks/src/tasks.ts";
import type * as StoreModule from "../chapters/s10-tasks/src/tasks-store.ts";
import {
  BASE_TOOLS,
  carried,
  chapterDir,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
  S10_TOOLS,
} from "./chapters.ts";
import { runContext } from "./helpers/context.ts";
import { isAlive } from "./helpers/process.ts";
import {
  delegateOnce,
  lastToolResults,
  runChapter,
  taskJson,
  tempWorkspace,
  toolNames,
  userSaid,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;

const TASKS_DIR = path.join(".harness", "tasks");
const SECTION =
  "Tasks: for work that must outlive this session or has dependencies, use the task tools: " +
  "create every task first, then add dependencies with update_task using the exact IDs " +
  "create_task returned; claim a task before working on it and complete it when done. " +
  "todo_write stays your short checklist; the task tool (delegation) is unrelated.";
const PRIORITY_ERROR =
  "Error: Invalid input for create_task: priority must be an integer between 0 and 10";
const ID_PATTERN = "must match the pattern ^task_[0-9a-f]{8}$";
const CLAIMER = new URL("./helpers/task-claimer.ts", import.meta.url).pathname;

const systemOf = (request: Request) => String(request.system);

/** Every entry of a folder: its text, or `<dir>`. */
function filesIn(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const file = path.join(dir, name);
    out[name] = lstatSync(file).isDirectory() ? "<dir>" : readFileSync(file, "utf8");
  }
  return out;
}

/** A pid that no process has any more (a child that ran and was reaped). */
function deadPid(): number {
  const pid = spawnSync("true").pid!;
  expect(isAlive(pid)).toBe(false);
  return pid;
}

/** A task-claimer child: `ready` once loaded, `done` with its claim lines when it ends. */
function startClaimer(storeFile: string, owner: string) {
  const child = spawn(process.execPath, ["--import", "tsx/esm", CLAIMER, storeFile, owner], {
    cwd: path.dirname(CLAIMER),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const ready = new Promise<void>((resolve) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.startsWith("ready\n")) resolve();
    });
  });
  const done = new Promise<{ owner: string; lines: string[] }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`claimer ${owner} exited ${code}: ${err}`));
      else resolve({ owner, lines: out.split("\n").slice(1).filter(Boolean) });
    });
  });
  // Killed unused (a run that filters the race test out): not an unhandled rejection.
  done.catch(() => {});
  return { child, ready, done };
}

const TAKER = new URL("./helpers/lock-taker.ts", import.meta.url).pathname;

/** A lock-taker child; `next()` resolves with its next line of output. */
function startTaker(lockFile: string) {
  const child = spawn(process.execPath, ["--import", "tsx/esm", TAKER, lockFile], {
    cwd: path.dirname(TAKER),
    stdio: ["pipe", "pipe", "inherit"],
  });
  const pending: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  let buffer = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let at = buffer.indexOf("\n"); at >= 0; at = buffer.indexOf("\n")) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
      const wake = waiting.shift();
      if (wake) wake(line);
      else pending.push(line);
    }
  });
  const next = () =>
    new Promise<string>((resolve) => {
      const line = pending.shift();
      if (line !== undefined) resolve(line);
      else waiting.push(resolve);
    });
  return { child, next, say: (line: string) => child.stdin.write(`${line}\n`) };
}

// The one lock implementation (lockfile.ts, s10 on; s16's workflows take it too).
describe.each(moduleVersions("s10", ["lockfile.ts"]))("$id lock file", (chapter) => {
  it("two processes reclaim one stale lock at once: exactly one holds it, every round", async () => {
    const lockFile = path.join(chapterDir(chapter), "src", "lockfile.ts");
    const takers = [startTaker(lockFile), startTaker(lockFile)];
    try {
      for (const taker of takers) expect(await taker.next()).toBe("ready");
      const file = path.join(tempWorkspace("lock-race"), "run.lock");
      for (let round = 0; round < 50; round++) {
        // A lock its holder left when it died.
        writeFileSync(file, `${JSON.stringify({ pid: deadPid(), time: "then" })}\n`);
        for (const taker of takers) taker.say(`take ${file}`);
        const answers = await Promise.all(takers.map((taker) => taker.next()));
        expect(answers.filter((answer) => answer === "held")).toHaveLength(1);
        const holder = takers[answers.indexOf("held")]!;
        expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(holder.child.pid);
        holder.say("release");
        expect(await holder.next()).toBe("released");
        expect(existsSync(file)).toBe(false);
        // Nothing left beside it: the stale file moved aside is gone too.
        expect(readdirSync(path.dirname(file))).toEqual([]);
      }
    } finally {
      for (const taker of takers) taker.child.kill();
    }
  });
});

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(
  moduleVersions("s10", ["tasks.ts", "tasks-store.ts", "task-record.ts"]).map((c) => c.id),
);
// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the rest of that block runs on every chapter (runsEdgeCases in chapters.ts). tasks.ts and
// its store render /tasks and the banner line.
const TASKS = moduleVersions("s10", ["tasks.ts", "tasks-store.ts", "task-record.ts"]);

describe.each(carried(chaptersFrom("s10"), MODULE_CHAPTERS, TASKS))("$id tasks", (chapter) => {
  let tasks: typeof TasksModule;
  let store_: typeof StoreModule;
  beforeAll(async () => {
    tasks = await importChapter<typeof TasksModule>(chapter, "tasks.ts");
    store_ = await importChapter<typeof StoreModule>(chapter, "tasks-store.ts");
  });

  /** A store over a fresh workspace, its six tools as `agent`, and what they printed. */
  function setup(options: StoreModule.TaskStoreOptions & { workdir?: string } = {}) {
    const workdir = options.workdir ?? tempWorkspace("tasks");
    const events: LoopEvent[] = [];
    const said: string[] = [];
    const store = new store_.TaskStore(workdir, {
      lockWaitMs: 50,
      lockRetryMs: 5,
      say: (line) => said.push(line),
      ...options,
    });
    const toolsAs = (owner: string) =>
      new Map(
        tasks
          .taskTools({ store, owner, emit: (event) => events.push(event) })
          .map((tool) => [tool.name, tool as ToolDefinition]),
      );
    const agent = toolsAs("agent");
    const context = runContext({ workdir });
    /** Calls a tool as the loop does (the schema check, then run); every `Error:` must be is_error. */
    const call = async (name: string, input: unknown, tools = agent): Promise<ToolOutput> => {
      const tool = tools.get(name)!;
      const parsed = checkInput(tool, input);
      const output = parsed.ok
        ? await tool.run(parsed.value, context)
        : { content: parsed.error, isError: true };
      if (output.content.startsWith("Error:")) expect(output.isError, output.content).toBe(true);
      return output;
    };
    const dir = path.join(workdir, TASKS_DIR);
    const fileOf = (id: string) => path.join(dir, `${id}.json`);
    const create = async (subject: string, extra: Record<string, unknown> = {}) => {
      const out = await call("create_task", { subject, ...extra });
      const id = /^Created (task_[0-9a-f]{8}): /.exec(out.content)?.[1];
      if (!id) throw new Error(`create_task said: ${out.content}`);
      return id;
    };
    const depend = async (id: string, ...deps: string[]) =>
      (await call("update_task", { task_id: id, addBlockedBy: deps })).content;
    const onDisk = (id: string) => JSON.parse(readFileSync(fileOf(id), "utf8")) as Task;
    const notices = () => events.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    /** Writes task files by hand (the folder too). */
    const seed = (files: Record<string, string>) => {
      mkdirSync(dir, { recursive: true });
      for (const [name, content] of Object.entries(files)) {
        writeFileSync(path.join(dir, name), content);
      }
    };
    return {
      workdir,
      dir,
      store,
      call,
      toolsAs,
      create,
      depend,
      fileOf,
      onDisk,
      notices,
      said,
      seed,
    };
  }

  if (MODULE_CHAPTERS.has(chapter.id)) {
    // -------------------------------------------------------------------------------------
    describe("the store's files", () => {
      it("reads make nothing: the folder appears on the first create, one pretty JSON file per task", async () => {
        const t = setup();
        expect((await t.call("list_tasks", {})).content).toBe(
          "No tasks. Use create_task to add some.",
        );
        for (const name of ["get_task", "claim_task", "complete_task"]) {
          expect((await t.call(name, { task_id: "task_00000000" })).content).toBe(
            "Error: Task not found: task_00000000",
          );
        }
        expect(await t.depend("task_00000000", "task_11111111")).toBe(
          "Error: Task not found: task_00000000",
        );
        expect(existsSync(path.join(t.workdir, ".harness"))).toBe(false);

        const out = await t.call("create_task", {
          subject: "  Write the schema  ",
          description: "tables and keys",
        });
        const id = /^Created (task_[0-9a-f]{8}): Write the schema \(p5\)$/.exec(out.content)?.[1];
        expect(id, out.content).toBeDefined();
        expect(out.isError).toBeUndefined();
        expect(readFileSync(t.fileOf(id!), "utf8")).toBe(
          `${JSON.stringify(
            {
              id,
              subject: "Write the schema",
              description: "tables and keys",
              status: "pending",
              owner: null,
              blockedBy: [],
              priority: 5,
              // From s13 a task names its worktree (none yet).
              ...(Number(chapter.id.slice(1)) >= 13 ? { worktree: null } : {}),
            },
            null,
            2,
          )}\n`,
        );
        // Only the task: the lock is released and the temp file renamed.
        expect(Object.keys(filesIn(t.dir))).toEqual([`${id}.json`]);
        expect(readFileSync(path.join(t.workdir, ".harness", ".gitignore"), "utf8")).toBe("*\n");
        expect(t.notices()).toEqual(["  [create] Write the schema"]);
        expect(JSON.parse((await t.call("get_task", { task_id: id })).content)).toEqual(
          t.onDisk(id!),
        );
      });

      it("refuses a blank subject and malformed IDs (Python's repr, or the schema's pattern), writing nothing", async () => {
        const t = setup();
        expect((await t.call("create_task", { subject: "   " })).content).toBe(
          "Error: Task subject cannot be empty",
        );
        const cases: Array<[string, unknown, string]> = [
          ["get_task", { task_id: "../escape" }, "Error: Invalid task ID: '../escape'"],
          ["get_task", { task_id: "task_missing" }, "Error: Invalid task ID: 'task_missing'"],
          ["claim_task", { task_id: "../outside" }, "Error: Invalid task ID: '../outside'"],
          [
            "complete_task",
            { task_id: "TASK_0000000A" },
            "Error: Invalid task ID: 'TASK_0000000A'",
          ],
          ["get_task", { task_id: "it's" }, `Error: Invalid task ID: "it's"`],
          [
            "update_task",
            { task_id: "task_00000000", addBlockedBy: ["../x"] },
            `Error: Invalid input for update_task: addBlockedBy[0] ${ID_PATTERN}`,
          ],
          [
            "update_task",
            { task_id: "../x", addBlockedBy: ["task_00000000"] },
            `Error: Invalid input for update_task: task_id ${ID_PATTERN}`,
          ],
          [
            "update_task",
            { task_id: "task_00000000", addBlockedBy: "task_11111111" },
            "Error: Invalid input for update_task: addBlockedBy must be an array",
          ],
          ["get_task", {}, "Error: Invalid input for get_task: task_id is required"],
          [
            "claim_task",
            { task_id: 7 },
            "Error: Invalid input for claim_task: task_id must be a string",
          ],
        ];
        for (const [name, input, message] of cases) {
          const out = await t.call(name, input);
          expect([name, out.content, out.isError]).toEqual([name, message, true]);
        }
        expect(existsSync(path.join(t.workdir, ".harness"))).toBe(false);
      });

      it("never overwrites a file: an ID that exists is drawn again; list keeps file-name order", async () => {
        const ids = ["deadbeef", "deadbeef", "cafebabe"];
        const t = setup({ newId: () => ids.shift()! });
        const first = await t.create("first");
        const before = readFileSync(t.fileOf(first), "utf8");
        const second = await t.create("second");
        expect([first, second]).toEqual(["task_deadbeef", "task_cafebabe"]);
        expect(readFileSync(t.fileOf(first), "utf8")).toBe(before);
        expect((await t.call("list_tasks", {})).content).toBe(
          "[ ] task_cafebabe (p5): second [pending]\n[ ] task_deadbeef (p5): first [pending]",
        );
        // A file a person put there is never replaced either; 100 draws, then give up.
        const stuck = setup({ newId: () => "deadbeef", workdir: t.workdir });
        expect((await stuck.call("create_task", { subject: "third" })).content).toBe(
          "Error: Could not allocate a unique task ID",
        );
        expect(readFileSync(t.fileOf(first), "utf8")).toBe(before);
        expect(existsSync(path.join(t.dir, ".lock"))).toBe(false);
      });

      it("priority: 0 to 10, default 5; anything else is refused with one message and nothing written", async () => {
        const t = setup();
        expect(t.onDisk(await t.create("low", { priority: 0 })).priority).toBe(0);
        expect((await t.call("create_task", { subject: "top", priority: 10 })).content).toMatch(
          /^Created task_[0-9a-f]{8}: top \(p10\)$/,
        );
        const before = filesIn(t.dir);
        for (const priority of [-1, 11, true, "high", 2.5, null]) {
          expect((await t.call("create_task", { subject: "x", priority })).content).toBe(
            PRIORITY_ERROR,
          );
        }
        expect(filesIn(t.dir)).toEqual(before);
        // On load: no key means 5; a hand-edited 11 makes the file unreadable.
        t.seed({
          "task_0000000a.json": taskJson("task_0000000a").replace(/,\n {2}"priority": 5/, ""),
          "task_0000000b.json": taskJson("task_0000000b", { priority: 11 }),
        });
        expect(
          JSON.parse((await t.call("get_task", { task_id: "task_0000000a" })).content),
        ).toEqual(expect.objectContaining({ priority: 5 }));
        expect((await t.call("get_task", { task_id: "task_0000000b" })).content).toBe(
          "Error: .harness/tasks/task_0000000b.json: priority must be an integer between 0 and 10",
        );
      });

      it("keeps keys it does not know, where they were, through claim and complete", async () => {
        const t = setup();
        const id = "task_0000abcd";
        const text = `{\n  "id": "${id}",\n  "estimate": 3,\n  "subject": "hand made",\n  "description": "",\n  "status": "pending",\n  "owner": null,\n  "blockedBy": [],\n  "labels": ["db"]\n}\n`;
        t.seed({ [`${id}.json`]: text });
        expect((await t.call("claim_task", { task_id: id })).content).toBe(
          `Claimed ${id} (hand made)`,
        );
        expect((await t.call("complete_task", { task_id: id })).content).toBe(
          `Completed ${id} (hand made)`,
        );
        const saved = readFileSync(t.fileOf(id), "utf8");
        expect(Object.keys(JSON.parse(saved))).toEqual([
          "id",
          "estimate",
          "subject",
          "description",
          "status",
          "owner",
          "blockedBy",
          "labels",
          "priority",
        ]);
        expect(JSON.parse(saved)).toMatchObject({
          estimate: 3,
          labels: ["db"],
          status: "completed",
          owner: "agent",
        });
      });

      it("lists valid tasks and one [!] line per corrupt or foreign file; such files are never rewritten", async () => {
        const t = setup();
        const good = "task_0000000a";
        t.seed({
          [`${good}.json`]: taskJson(good, { subject: "good", blockedBy: ["task_0000000c"] }),
          "task_0000000b.json": "{ not json",
          "task_0000000c.json": taskJson("task_0000000c", { status: "done" as "pending" }),
          "task_0000000d.json": taskJson("task_0000000e"),
          "notes.txt": "a person's notes",
          [`${good}.json.123.0badf00d.tmp`]: "half a write",
        });
        mkdirSync(path.join(t.dir, "task_0000000f.json"));
        const before = filesIn(t.dir);
        const mtimes = () =>
          Object.keys(before).map((name) => statSync(path.join(t.dir, name)).mtimeMs);
        const times = mtimes();

        const list = (await t.call("list_tasks", {})).content.split("\n");
        expect(list[0]).toBe(`[ ] ${good} (p5): good [pending] (blockedBy: task_0000000c)`);
        expect(list.slice(1)).toEqual([
          "[!] .harness/tasks/notes.txt: not a task file (task_<8 hex>.json) (skipped)",
          expect.stringMatching(
            /^\[!\] \.harness\/tasks\/task_0000000b\.json: invalid JSON \(.+\) \(skipped\)$/,
          ),
          '[!] .harness/tasks/task_0000000c.json: status must be one of pending, in_progress, completed (found "done") (skipped)',
          "[!] .harness/tasks/task_0000000d.json: Task file ID does not match task_0000000d (skipped)",
          "[!] .harness/tasks/task_0000000f.json: not a regular file (skipped)",
        ]);
        // Every operation on a corrupt task is an error naming its path and reason.
        for (const name of ["get_task", "claim_task", "complete_task"]) {
          expect((await t.call(name, { task_id: "task_0000000b" })).content).toMatch(
            /^Error: \.harness\/tasks\/task_0000000b\.json: invalid JSON \(/,
          );
        }
        expect(await t.depend("task_0000000c", good)).toMatch(
          /^Error: \.harness\/tasks\/task_0000000c\.json: status must be one of/,
        );
        expect(await t.depend(good, "task_0000000b")).toMatch(
          /^Error: Dependency task_0000000b cannot be read \(\.harness\/tasks\/task_0000000b\.json: invalid JSON/,
        );
        // A corrupt prerequisite counts as incomplete.
        const blocked = await t.call("claim_task", { task_id: good });
        expect([blocked.content, blocked.isError]).toEqual(["Blocked by: ['task_0000000c']", true]);
        // Writes elsewhere in the store leave them alone too.
        const other = await t.create("other");
        await t.call("claim_task", { task_id: other });
        await t.call("complete_task", { task_id: other });
        const after = filesIn(t.dir);
        delete after[`${other}.json`];
        expect(after).toEqual(before);
        expect(mtimes()).toEqual(times);
      });

      it.each([
        ["the tasks folder", TASKS_DIR],
        ["the .harness folder", ".harness"],
      ])(
        "refuses a store whose real path leaves the workspace (%s is a symlink)",
        async (_, link) => {
          const t = setup();
          const outside = tempWorkspace("tasks-outside");
          mkdirSync(path.dirname(path.join(t.workdir, link)), { recursive: true });
          symlinkSync(outside, path.join(t.workdir, link));
          const out = await t.call("create_task", { subject: "escape" });
          expect([out.content, out.isError]).toEqual([
            "Error: Task store escapes the workspace",
            true,
          ]);
          expect((await t.call("list_tasks", {})).content).toBe(
            "Error: Task store escapes the workspace",
          );
          expect((await t.call("get_task", { task_id: "task_00000000" })).content).toBe(
            "Error: Task store escapes the workspace",
          );
          expect(readdirSync(outside)).toEqual([]);
        },
      );

      it("refuses unknown properties on create_task and update_task (the schema's additionalProperties)", async () => {
        const t = setup();
        const a = await t.create("a");
        const b = await t.create("b");
        const before = filesIn(t.dir);
        const created = await t.call("create_task", { subject: "c", blockedBy: [a] });
        expect(created.content).toBe(
          "Error: Invalid input for create_task: unknown property 'blockedBy' (create_task takes " +
            "subject, description, priority)",
        );
        const updated = await t.call("update_task", {
          task_id: b,
          addBlockedBy: [a],
          status: "completed",
        });
        expect(updated.content).toBe(
          "Error: Invalid input for update_task: unknown property 'status' (update_task takes task_id, addBlockedBy)",
        );
        expect(filesIn(t.dir)).toEqual(before);
      });
    });

    // -------------------------------------------------------------------------------------
    describe("the graph", () => {
      /** §6's four tasks, built in two phases through the tools. */
      async function fourTasks(t: ReturnType<typeof setup>) {
        const schema = await t.create("setup database schema");
        const api = await t.create("create API endpoints");
        const tests = await t.create("write tests");
        const docs = await t.create("write docs");
        const updates = [
          await t.depend(api, schema),
          await t.depend(tests, api),
          await t.depend(docs, schema),
        ];
        return { schema, api, tests, docs, updates };
      }

      it("two phases: nodes first, then the edges by the IDs create_task returned", async () => {
        const t = setup();
        const { schema, api, tests, docs, updates } = await fourTasks(t);
        expect(updates).toEqual([
          `Updated ${api} blockedBy: ${schema}`,
          `Updated ${tests} blockedBy: ${api}`,
          `Updated ${docs} blockedBy: ${schema}`,
        ]);
        expect([schema, api, tests, docs].map((id) => t.onDisk(id).blockedBy)).toEqual([
          [],
          [schema],
          [api],
          [schema],
        ]);
        expect(t.notices()).toContain(`  [update] create API endpoints blockedBy: ${schema}`);
        // Adding to the edges keeps the old ones and lists them all.
        expect(await t.depend(docs, api)).toBe(`Updated ${docs} blockedBy: ${schema}, ${api}`);
      });

      it("a missing or self dependency fails the whole request: not one byte changes", async () => {
        const t = setup();
        const a = await t.create("a");
        const b = await t.create("b");
        const before = filesIn(t.dir);
        expect(await t.depend(b, "task_00000000")).toBe(
          "Error: Dependency not found: task_00000000",
        );
        expect(await t.depend(b, b)).toBe("Error: Task cannot depend on itself");
        expect(await t.depend(b, a, "task_00000000")).toBe(
          "Error: Dependency not found: task_00000000",
        );
        expect((await t.call("update_task", { task_id: b, addBlockedBy: [] })).content).toBe(
          "Error: Invalid input for update_task: addBlockedBy must have at least 1 item",
        );
        expect(filesIn(t.dir)).toEqual(before);
        expect(t.onDisk(b).blockedBy).toEqual([]);
      });

      it("duplicate edges are stored once; a repeated edge writes nothing", async () => {
        const t = setup();
        const a = await t.create("a");
        const b = await t.create("b");
        expect(await t.depend(b, a, a)).toBe(`Updated ${b} blockedBy: ${a}`);
        const once = readFileSync(t.fileOf(b), "utf8");
        const mtime = statSync(t.fileOf(b)).mtimeMs;
        expect(await t.depend(b, a)).toBe(`Updated ${b} blockedBy: ${a}`);
        expect(readFileSync(t.fileOf(b), "utf8")).toBe(once);
        expect(statSync(t.fileOf(b)).mtimeMs).toBe(mtime);
        expect(t.onDisk(b).blockedBy).toEqual([a]);
      });

      it("refuses a cycle, through three hops too, with nothing written", async () => {
        const t = setup();
        const first = await t.create("first");
        const second = await t.create("second");
        const third = await t.create("third");
        const fourth = await t.create("fourth");
        const fifth = await t.create("fifth");
        await t.depend(second, first);
        await t.depend(third, second);
        await t.depend(fourth, third);
        const before = filesIn(t.dir);
        expect(await t.depend(first, second)).toBe(
          `Error: Dependency cycle detected: ${first} -> ${second}`,
        );
        expect(await t.depend(first, fourth)).toBe(
          `Error: Dependency cycle detected: ${first} -> ${fourth}`,
        );
        // One good edge and one that closes a cycle: neither is written.
        expect(await t.depend(first, fifth, fourth)).toBe(
          `Error: Dependency cycle detected: ${first} -> ${fourth}`,
        );
        expect(filesIn(t.dir)).toEqual(before);
        expect(t.onDisk(first).blockedBy).toEqual([]);
      });

      it("a node missing or unreadable during the cycle search has no edges: no error", async () => {
        const t = setup();
        const a = "task_0000000a";
        const b = "task_0000000b";
        t.seed({
          // a waits on a task whose file is gone, and on a corrupt one.
          [`${a}.json`]: taskJson(a, { blockedBy: ["task_99999999", "task_0000000c"] }),
          [`${b}.json`]: taskJson(b),
          "task_0000000c.json": "{",
        });
        expect(await t.depend(b, a)).toBe(`Updated ${b} blockedBy: ${a}`);
      });

      it("updates only a pending, unowned task", async () => {
        const t = setup();
        const a = await t.create("a");
        const b = await t.create("b");
        await t.call("claim_task", { task_id: a });
        const message = `Error: Task ${a} dependencies can only be updated while pending and unowned`;
        const before = filesIn(t.dir);
        expect(await t.depend(a, b)).toBe(message);
        await t.call("complete_task", { task_id: a });
        expect(await t.depend(a, b)).toBe(message);
        t.seed({ "task_0000000e.json": taskJson("task_0000000e", { owner: "someone" }) });
        expect(await t.depend("task_0000000e", b)).toBe(
          "Error: Task task_0000000e dependencies can only be updated while pending and unowned",
        );
        expect(t.onDisk(a).blockedBy).toEqual([]);
        expect(before[`${b}.json`]).toBe(readFileSync(t.fileOf(b), "utf8"));
      });

      it("claims only when every prerequisite is completed; completing reports what it unblocked", async () => {
        const t = setup();
        const other = t.toolsAs("other");
        const { schema, api, docs } = await fourTasks(t);
        const apiBefore = readFileSync(t.fileOf(api), "utf8");
        const blocked = await t.call("claim_task", { task_id: api });
        expect([blocked.content, blocked.isError]).toEqual([`Blocked by: ['${schema}']`, true]);
        expect(readFileSync(t.fileOf(api), "utf8")).toBe(apiBefore);

        expect((await t.call("complete_task", { task_id: schema })).content).toBe(
          `Error: Task ${schema} is pending, cannot complete`,
        );
        expect((await t.call("claim_task", { task_id: schema })).content).toBe(
          `Claimed ${schema} (setup database schema)`,
        );
        expect(t.onDisk(schema)).toMatchObject({ status: "in_progress", owner: "agent" });
        expect((await t.call("claim_task", { task_id: schema })).content).toBe(
          `Error: Task ${schema} is in_progress, cannot claim`,
        );
        expect((await t.call("complete_task", { task_id: schema }, other)).content).toBe(
          `Error: Task ${schema} is owned by agent, not other`,
        );
        expect(t.onDisk(schema).status).toBe("in_progress");

        const done = await t.call("complete_task", { task_id: schema });
        const unblocked = [api, docs]
          .sort()
          .map((id) => t.onDisk(id).subject)
          .join(", ");
        expect(done.content).toBe(
          `Completed ${schema} (setup database schema)\nUnblocked: ${unblocked}`,
        );
        expect(t.onDisk(schema)).toMatchObject({ status: "completed", owner: "agent" });
        expect(t.notices().slice(-3)).toEqual([
          "  [claim] setup database schema -> in_progress (owner: agent)",
          "  [complete] setup database schema",
          `  [unblocked] ${unblocked}`,
        ]);
        expect((await t.call("complete_task", { task_id: schema })).content).toBe(
          `Error: Task ${schema} is completed, cannot complete`,
        );
        expect((await t.call("claim_task", { task_id: api })).content).toBe(
          `Claimed ${api} (create API endpoints)`,
        );
      });

      it("Unblocked: only what this completion made startable, in file-name order, commas as written", async () => {
        const ids = ["000000d0", "000000b0", "000000a0", "000000c0", "000000e0", "000000f0"];
        const t = setup({ newId: () => ids.shift()! });
        const done = await t.create("done before"); // task_000000d0
        const api = await t.create("api"); // b0: created before docs, listed after it
        const docs = await t.create("docs, part 1"); // a0
        const waits = await t.create("waits on two"); // c0
        await t.create("free"); // e0
        const ready = await t.create("ready already"); // f0
        const schema = "task_00000001";
        t.seed({ [`${schema}.json`]: taskJson(schema, { subject: "schema" }) });
        await t.depend(api, schema);
        await t.depend(docs, schema);
        await t.depend(waits, schema, api);
        await t.call("claim_task", { task_id: done });
        await t.call("complete_task", { task_id: done });
        await t.depend(ready, done);
        await t.call("claim_task", { task_id: schema });
        const out = await t.call("complete_task", { task_id: schema });
        // Not `free` (no edges), not `ready already` (startable before), not `waits on two`.
        expect(out.content).toBe(`Completed ${schema} (schema)\nUnblocked: docs, part 1, api`);
      });

      it("canStart: no edges, completed, pending, deleted and corrupt prerequisites", async () => {
        const t = setup();
        const free = await t.create("free");
        const dep = await t.create("dep");
        const waits = await t.create("waits");
        await t.depend(waits, dep);
        expect(t.store.canStart(free)).toBe(true);
        expect(t.store.canStart(waits)).toBe(false);
        await t.call("claim_task", { task_id: dep });
        await t.call("complete_task", { task_id: dep });
        expect(t.store.canStart(waits)).toBe(true);
        writeFileSync(t.fileOf(dep), "{");
        expect(t.store.canStart(waits)).toBe(false);
        unlinkSync(t.fileOf(dep));
        expect(t.store.canStart(waits)).toBe(false);
        expect((await t.call("claim_task", { task_id: waits })).content).toBe(
          `Blocked by: ['${dep}']`,
        );
      });

      it("list_tasks and get_task texts: markers, priority, owner, edges, the whole record", async () => {
        const t = setup();
        const a = await t.create("alpha", { priority: 7 });
        const b = await t.create("beta");
        const c = await t.create("gamma");
        await t.depend(c, a, b);
        await t.call("claim_task", { task_id: a });
        await t.call("claim_task", { task_id: b });
        await t.call("complete_task", { task_id: b });
        const lines = new Map(
          (await t.call("list_tasks", {})).content
            .split("\n")
            .map((line) => [line.slice(4, 17), line]),
        );
        expect(lines.get(a)).toBe(`[>] ${a} (p7): alpha [in_progress] [agent]`);
        expect(lines.get(b)).toBe(`[x] ${b} (p5): beta [completed] [agent]`);
        expect(lines.get(c)).toBe(`[ ] ${c} (p5): gamma [pending] (blockedBy: ${a}, ${b})`);
        expect((await t.call("get_task", { task_id: c })).content).toBe(
          JSON.stringify(t.onDisk(c), null, 2),
        );
      });
    });

    // -------------------------------------------------------------------------------------
    describe("the lock", () => {
      /** Two claimer processes, started now: loading tsx and the store takes most of a second. */
      let claimers: ReturnType<typeof startClaimer>[] = [];
      beforeAll(() => {
        const storeFile = path.join(chapterDir(chapter), "src", "tasks-store.ts");
        claimers = ["one", "two"].map((owner) => startClaimer(storeFile, owner));
      });
      afterAll(() => {
        for (const c of claimers) c.child.kill();
      });

      const lockOf = (dir: string) => path.join(dir, ".lock");
      const writeLock = (dir: string, pid: number | string) => {
        mkdirSync(dir, { recursive: true });
        const content =
          typeof pid === "string"
            ? pid
            : `${JSON.stringify({ pid, time: new Date().toISOString() })}\n`;
        writeFileSync(lockOf(dir), content);
        return content;
      };

      it("waits for a busy lock, then gives up naming its pid; nothing is written and the lock stays", async () => {
        const t = setup({ lockWaitMs: 40 });
        const a = await t.create("a");
        const content = writeLock(t.dir, process.pid);
        const before = filesIn(t.dir);
        const started = Date.now();
        for (const [name, input] of [
          ["create_task", { subject: "b" }],
          ["claim_task", { task_id: a }],
          ["update_task", { task_id: a, addBlockedBy: [a] }],
        ] as const) {
          expect((await t.call(name, input)).content).toBe(
            `Error: Task store is busy (locked by pid ${process.pid})`,
          );
        }
        expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 35);
        expect(filesIn(t.dir)).toEqual(before);
        expect(readFileSync(lockOf(t.dir), "utf8")).toBe(content);
        // Reads do not wait for it.
        expect((await t.call("get_task", { task_id: a })).isError).toBeUndefined();
      });

      it("goes through once the holder lets go within the wait", async () => {
        const t = setup({ lockWaitMs: 2_000 });
        const a = await t.create("a");
        writeLock(t.dir, process.pid);
        setTimeout(() => unlinkSync(lockOf(t.dir)), 60);
        const started = Date.now();
        expect((await t.call("claim_task", { task_id: a })).content).toBe(`Claimed ${a} (a)`);
        expect(Date.now() - started).toBeGreaterThanOrEqual(50);
        expect(existsSync(lockOf(t.dir))).toBe(false);
      });

      it("removes a stale lock (its pid is gone) with one printed line, then goes on", async () => {
        const t = setup();
        const a = await t.create("a");
        const pid = deadPid();
        writeLock(t.dir, pid);
        expect((await t.call("claim_task", { task_id: a })).content).toBe(`Claimed ${a} (a)`);
        expect(t.said).toEqual([
          `[tasks] removed a stale lock (pid ${pid}, no longer running): .harness/tasks/.lock`,
        ]);
        expect(existsSync(lockOf(t.dir))).toBe(false);
        // A torn lock (no pid to read) is stale once it is old; a fresh one is busy.
        writeLock(t.dir, "");
        expect((await t.call("complete_task", { task_id: a })).content).toBe(
          "Error: Task store is busy (locked by pid unknown)",
        );
        const old = new Date(Date.now() - 60_000);
        utimesSync(lockOf(t.dir), old, old);
        expect((await t.call("complete_task", { task_id: a })).content).toBe(`Completed ${a} (a)`);
        expect(t.said.at(-1)).toBe(
          "[tasks] removed a stale lock (an unreadable lock): .harness/tasks/.lock",
        );
      });

      it("refuses at once when something that is not a lock file holds the lock's place", async () => {
        const t = setup({ lockWaitMs: 5_000 });
        const a = await t.create("a");
        mkdirSync(lockOf(t.dir));
        const started = Date.now();
        const result = await t.call("claim_task", { task_id: a });
        expect(result).toMatchObject({
          content:
            "Error: .harness/tasks/.lock is not a lock file this harness can read (EISDIR); remove it",
          isError: true,
        });
        expect(Date.now() - started).toBeLessThan(1_000);
        expect(JSON.parse(readFileSync(t.fileOf(a), "utf8")).status).toBe("pending");
      });

      it("is released on every path: success, refusal, corrupt file, thrown error", async () => {
        const t = setup();
        const a = await t.create("a");
        const b = await t.create("b");
        await t.depend(b, a);
        expect(await t.depend(a, b)).toMatch(/^Error: Dependency cycle/);
        expect((await t.call("claim_task", { task_id: b })).content).toMatch(/^Blocked by/);
        writeFileSync(t.fileOf(a), "{");
        expect((await t.call("claim_task", { task_id: a })).content).toMatch(/^Error: /);
        expect((await t.call("complete_task", { task_id: "task_00000000" })).content).toMatch(
          /^Error: Task not found/,
        );
        expect(readdirSync(t.dir).sort()).toEqual([`${a}.json`, `${b}.json`].sort());
        // And a store that finished its changes holds nothing: another one gets in at once.
        const next = setup({ workdir: t.workdir, lockWaitMs: 0 });
        expect((await next.call("create_task", { subject: "c" })).content).toMatch(/^Created /);
        t.store.close();
      });

      it("two processes race to claim the same tasks: each task has exactly one Claimed", async () => {
        const t = setup();
        const ids: string[] = [];
        for (let i = 0; i < 8; i++) ids.push(await t.create(`task ${i}`));
        await Promise.all(claimers.map((c) => c.ready));
        for (const c of claimers)
          c.child.stdin.end(`${JSON.stringify({ workdir: t.workdir, ids })}\n`);
        const results = await Promise.all(claimers.map((c) => c.done));
        for (const id of ids) {
          const winners = results.filter((r) => r.lines.includes(`Claimed ${id}`));
          expect(winners, id).toHaveLength(1);
          const loser = results.find((r) => r !== winners[0])!;
          expect(loser.lines).toContain(`Error: Task ${id} is in_progress, cannot claim`);
          expect(t.onDisk(id)).toMatchObject({ status: "in_progress", owner: winners[0]!.owner });
        }
        expect(results.flatMap((r) => r.lines)).toHaveLength(2 * ids.length);
        expect(existsSync(lockOf(t.dir))).toBe(false);
      });
    });
  }

  // -------------------------------------------------------------------------------------
  // Each test runs its own chapter, workspace and server: they wait side by side.
  // The contract, on every chapter: the fifteen tools and the Tasks section in this
  // composition, and the tools at work in its loop. The edge case (/tasks and the start
  // banner over corrupt and missing files) runs where TASKS differ and on the newest chapter.
  describe.concurrent("through the chapter", () => {
    const edge = edgeCase(chapter, TASKS);

    it("offers the fifteen tools to the main agent, the five base tools to a subagent; the Tasks section before Memory", async () => {
      const run = await runChapter(chapter, {
        prompts: ["delegate"],
        steps: delegateOnce(),
      });
      const [main, child] = run.requests as [Request, Request];
      // The first fifteen: later chapters add their tools after them.
      expect(toolNames(main).slice(0, 15)).toEqual(S10_TOOLS);
      expect(toolNames(child)).toEqual(BASE_TOOLS);
      const specs = new Map((main.tools as Anthropic.Tool[]).map((tool) => [tool.name, tool]));
      const create = specs.get("create_task")!;
      expect(create.description).toBe(
        "Create a task (priority 0-10, 5 default) and return its runtime-generated ID.",
      );
      expect(create.input_schema).toMatchObject({
        required: ["subject"],
        additionalProperties: false,
        properties: { priority: { type: "integer", minimum: 0, maximum: 10 } },
      });
      expect(Object.keys(create.input_schema.properties as object)).not.toContain("blockedBy");
      expect(specs.get("update_task")!.input_schema).toMatchObject({
        required: ["task_id", "addBlockedBy"],
        additionalProperties: false,
        properties: {
          task_id: { pattern: "^task_[0-9a-f]{8}$" },
          addBlockedBy: { type: "array", minItems: 1, items: { pattern: "^task_[0-9a-f]{8}$" } },
        },
      });
      const system = systemOf(main);
      expect(system).toContain(`\n\n${SECTION}\n\n`);
      expect(system.indexOf("Context: long conversations")).toBeLessThan(system.indexOf(SECTION));
      expect(system.indexOf(SECTION)).toBeLessThan(system.indexOf("Memory: "));
      expect(systemOf(child)).not.toContain("Tasks:");
      expect(existsSync(path.join(run.workdir, TASKS_DIR))).toBe(false);
    });

    it("runs the tools in the loop: files written, transition lines printed, every Error sent as is_error", async () => {
      const results = (r: Request) => lastToolResults(r).map((b) => [b.content, b.is_error]);
      const run = await runChapter(chapter, {
        prompts: ["plan it"],
        files: {
          ".claude/settings.json": JSON.stringify({ permissions: { deny: ["get_task"] } }),
        },
        steps: [
          {
            when: userSaid("plan it"),
            reply: reply(
              toolUse("create_task", { subject: "schema" }),
              toolUse("create_task", { subject: "api", priority: 8 }),
            ),
          },
          {
            when: (r) => String(lastToolResults(r)[0]?.content).startsWith("Created"),
            reply: (r) => {
              const [schema, api] = lastToolResults(r).map(
                (b) => /task_[0-9a-f]{8}/.exec(String(b.content))![0],
              );
              return reply(
                toolUse("update_task", { task_id: api!, addBlockedBy: [schema!] }),
                toolUse("claim_task", { task_id: api! }),
                toolUse("get_task", { task_id: "../../etc/passwd" }),
                toolUse("claim_task", { task_id: "../../etc/passwd" }),
                toolUse("create_task", { subject: "x", blockedBy: [schema!] }),
                toolUse("create_task", { subject: "y", priority: "high" }),
                toolUse("complete_task", { task_id: "task_00000000" }),
              );
            },
          },
          { when: (r) => results(r).length === 7, reply: reply(text("planned")) },
        ],
      });
      expect(run.code).toBe(0);
      const [, second, third] = run.requests as [Request, Request, Request];
      const [schema, api] = lastToolResults(second).map(
        (b) => /task_[0-9a-f]{8}/.exec(String(b.content))![0],
      );
      expect(results(second)).toEqual([
        [`Created ${schema}: schema (p5)`, undefined],
        [`Created ${api}: api (p8)`, undefined],
      ]);
      const sent = results(third);
      expect(sent[0]).toEqual([`Updated ${api} blockedBy: ${schema}`, undefined]);
      expect(sent[1]).toEqual([`Blocked by: ['${schema}']`, true]);
      expect(sent[2]![0]).toMatch(/^Permission denied by deny rule get_task/);
      expect(sent[3]).toEqual(["Error: Invalid task ID: '../../etc/passwd'", true]);
      expect(String(sent[4]![0])).toMatch(
        /^Error: Invalid input for create_task: unknown property 'blockedBy'/,
      );
      expect(sent[5]).toEqual([PRIORITY_ERROR, true]);
      expect(sent[6]).toEqual(["Error: Task not found: task_00000000", true]);
      for (const [content, isError] of sent) {
        if (String(content).startsWith("Error:")) expect(isError).toBe(true);
      }
      const dir = path.join(run.workdir, TASKS_DIR);
      expect(readdirSync(dir).sort()).toEqual([`${schema}.json`, `${api}.json`].sort());
      expect(JSON.parse(readFileSync(path.join(dir, `${api}.json`), "utf8"))).toMatchObject({
        blockedBy: [schema],
        status: "pending",
        priority: 8,
      });
      expect(run.output).toContain("  [create] schema\n");
      expect(run.output).toContain(`  [update] api blockedBy: ${schema}\n`);
      expect(run.output).toContain("planned");
    });

    edge(
      "/tasks prints the counts and each task with its blockers' status, with no model call",
      async () => {
        const workdir = tempWorkspace("tasks-cmd");
        const t = setup({ workdir });
        const ids = ["0000000a", "0000000b", "0000000c"];
        const seeded = setup({ workdir, newId: () => ids.shift()! });
        const a = await seeded.create("schema");
        const b = await seeded.create("api");
        const c = await seeded.create("docs");
        await seeded.depend(b, a);
        await seeded.depend(c, a, b);
        await seeded.call("claim_task", { task_id: a });
        await seeded.call("complete_task", { task_id: a });
        t.seed({
          "task_0000000d.json": taskJson("task_0000000d", {
            subject: "lost",
            blockedBy: ["task_99999999"],
          }),
          "task_0000000e.json": "{",
        });
        const run = await runChapter(chapter, { workdir, prompts: ["/tasks"] });
        expect(run.requests).toHaveLength(0);
        expect(run.output).toContain(
          "[tasks] 4 task(s) in .harness/tasks: 3 pending, 0 in_progress, 1 completed, 1 unreadable file(s); /tasks shows them",
        );
        expect(run.output).toContain(
          [
            "pending: 3",
            "in_progress: 0",
            "completed: 1",
            `[x] ${a} (p5): schema [completed] [agent]`,
            `[ ] ${b} (p5): api [pending] (blockedBy: ${a} [completed])`,
            `[ ] ${c} (p5): docs [pending] (blockedBy: ${a} [completed], ${b} [pending])`,
            "[ ] task_0000000d (p5): lost [pending] (blockedBy: task_99999999 [missing])",
            "[!] .harness/tasks/task_0000000e.json: invalid JSON (",
          ].join("\n"),
        );
        expect(run.output).toMatch(/task_0000000e\.json: invalid JSON \(.*\) \(skipped\)\n/);
        expect(readFileSync(path.join(t.dir, "task_0000000e.json"), "utf8")).toBe("{");
      },
    );
  });
});
