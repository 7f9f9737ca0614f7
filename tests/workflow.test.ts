/**
 * Workflows (s16): the runtime's rules with a runner the test controls (ids, the journal,
 * resume checks, the lock, limits, structured output, the primitives, the bundled
 * workflow), then through the chapter against the fake API: the tool in the pool, a real
 * run's requests and lines, a settings rule, `/workflows`, and Ctrl-C during a run.
 */
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { checkInput, type JsonSchema } from "shared";
import { reply, ScriptedModel, startFakeServer, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as WorkflowModule from "../chapters/s16-workflow/src/workflow.ts";
import type * as CoreModule from "../chapters/s16-workflow/src/workflow-core.ts";
import type * as RuntimeModule from "../chapters/s16-workflow/src/workflow-runtime.ts";
import type * as ReviewModule from "../chapters/s16-workflow/src/workflows/review-changes.ts";
import {
  carried,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
  S13_TOOLS,
} from "./chapters.ts";
import {
  afterTools,
  isWorkflowAgent,
  lastToolResults,
  reviewAgentAnswer,
  runChapter,
  tempWorkspace,
  userSaid,
} from "./helpers/run.ts";

type Runner = CoreModule.AgentRunner;
type Script = CoreModule.WorkflowScript;

const WORKFLOW = moduleVersions("s16", [
  "workflow.ts",
  "workflow-core.ts",
  "workflow-journal.ts",
  "workflow-runtime.ts",
  "workflows/review-changes.ts",
]);
const RUN_ID = /^wf_test-flow_[0-9a-f]{16}$/;

/** A runner that answers from a function and records every prompt. */
function fakeRunner(answer: (prompt: string) => unknown | Promise<unknown> = (p) => `echo:${p}`) {
  const prompts: string[] = [];
  const runner: Runner = {
    async run(prompt, { signal }) {
      prompts.push(prompt);
      const value = await answer(prompt);
      signal.throwIfAborted();
      return { value, tokens: 1 };
    },
  };
  return { runner, prompts };
}

describe.each(WORKFLOW)("$id workflow runtime", (chapter) => {
  let wf: typeof WorkflowModule;
  let core: typeof CoreModule;
  let rt: typeof RuntimeModule;
  let review: typeof ReviewModule;
  beforeAll(async () => {
    wf = await importChapter<typeof WorkflowModule>(chapter, "workflow.ts");
    core = await importChapter<typeof CoreModule>(chapter, "workflow-core.ts");
    rt = await importChapter<typeof RuntimeModule>(chapter, "workflow-runtime.ts");
    review = await importChapter<typeof ReviewModule>(chapter, "workflows/review-changes.ts");
  });

  const script = (run: Script["run"], name = "test-flow"): Script => ({
    meta: { name, description: "a test workflow", phases: ["Review"] },
    run,
  });
  const setup = (runner: Runner, scripts: Script[] = []) => {
    const workdir = tempWorkspace("wf");
    const lines: string[] = [];
    const registry: CoreModule.Registry = new Map(scripts.map((s) => [s.meta.name, s]));
    const runtime = new rt.WorkflowRuntime({
      workdir,
      registry,
      runner,
      say: (line) => lines.push(line),
    });
    const dir = path.join(workdir, ".harness/workflows");
    const read = (file: string) => readFileSync(path.join(dir, file), "utf8");
    const files = () => (existsSync(dir) ? readdirSync(dir).sort() : []);
    const signal = new AbortController().signal;
    return { workdir, runtime, lines, dir, read, files, signal };
  };
  const oneStep = script(async (w) => {
    w.phase("Review");
    const value = await w.agent("say step", { label: "step" });
    w.log("done");
    return value;
  });

  it("checks a workflow's meta: fields, a safe name, phases", () => {
    expect(() => core.validateMeta(null)).toThrow("meta requires `name` and `description`");
    expect(() => core.validateMeta({ name: "x" })).toThrow(
      "meta requires `name` and `description`",
    );
    for (const name of ["../escape", "../../escape", "nested/name", "-dash"])
      expect(() => core.validateMeta({ name, description: "d" })).toThrow(/invalid workflow name/);
    expect(() => core.validateMeta({ name: "ok", description: "d", phases: ["A", ""] })).toThrow(
      "meta.phases must be a list of non-empty strings",
    );
    expect(core.validateMeta({ name: "ok.v2_x", description: "d" }).name).toBe("ok.v2_x");
  });

  it("offers name, args and resume_from_run_id only, and refuses code or a wrong name", () => {
    const tool = wf.workflowTool(setup(fakeRunner().runner).runtime, {
      interrupted: () => {},
      ended: () => {},
    });
    expect(tool.input_schema).toEqual({
      type: "object",
      properties: {
        name: { type: "string" },
        args: { type: "object" },
        resume_from_run_id: { type: "string" },
      },
      required: ["name"],
      additionalProperties: false,
    });
    expect(checkInput(tool, { name: 1 })).toEqual({
      ok: false,
      error: "Error: Invalid input for Workflow: name must be a string",
    });
    expect(checkInput(tool, { name: "x", script: "rm -rf /" })).toEqual({
      ok: false,
      error:
        "Error: Invalid input for Workflow: unknown property 'script' (Workflow takes name, args, resume_from_run_id)",
    });
    expect(checkInput(tool, { name: "x", args: [1] })).toEqual({
      ok: false,
      error: "Error: Invalid input for Workflow: args must be an object",
    });
  });

  it("checks structured output with a path to what is wrong", () => {
    const findings = review.FINDINGS_SCHEMA;
    const problem = (value: unknown, schema: JsonSchema) => {
      const checked = core.checkOutput(value, schema);
      return checked.ok ? null : checked.error;
    };
    expect(problem({}, findings)).toBe("findings is required");
    expect(problem({ findings: {} }, findings)).toBe("findings must be an array");
    expect(problem({ findings: [{ title: "t", severity: "urgent" }] }, findings)).toBe(
      "findings[0].severity must be one of high, medium, low",
    );
    expect(problem(true, { type: "number" })).toBe("output must be a number");
    expect(problem(Number.NaN, { type: "number" })).toBe("output must be a number");
    expect(problem({ findings: [] }, findings)).toBeNull();
    expect(core.checkOutput("anything", undefined)).toEqual({ ok: true, value: "anything" });
  });

  it("takes JSON from a fence or from prose (braces inside strings too), else keeps the text", () => {
    expect(core.extractJson('```json\n{"a": 1}\n```')).toEqual({ a: 1 });
    expect(core.extractJson('Here: {"t": "a } b", "n": {"m": 2}} done')).toEqual({
      t: "a } b",
      n: { m: 2 },
    });
    expect(core.extractJson("no json { here")).toBe("no json { here");
  });

  it("keys a call by label, prompt and schema: stable, ten digits, order-free", () => {
    const key = core.agentKey("l", "p", { type: "object", required: ["a"] });
    expect(key).toMatch(/^agent-\d{10}$/);
    expect(core.agentKey("l", "p", { required: ["a"], type: "object" })).toBe(key);
    expect(core.agentKey("other", "p", { type: "object", required: ["a"] })).not.toBe(key);
    expect(core.agentKey("l", "p", null)).not.toBe(key);
  });

  it("counts a budget and refuses past it without spending", () => {
    const budget = new core.Budget(10);
    budget.add(6);
    expect(budget.remaining).toBe(4);
    expect(() => budget.add(5)).toThrow("token budget exceeded (11 > 10)");
    expect(budget.spent).toBe(6);
    expect(new core.Budget(null).remaining).toBe(Number.POSITIVE_INFINITY);
  });

  it("runs, prints its events as they happen and leaves snapshot, output, journal and last_run", async () => {
    const { runner } = fakeRunner();
    const { runtime, lines, read, files, signal, dir } = setup(runner, [oneStep]);
    const outcome = await runtime.run(oneStep, null, undefined, signal);
    const runId = outcome.launched.runId;
    expect(runId).toMatch(RUN_ID);
    expect(outcome.launched).toEqual({
      status: "async_launched",
      taskId: `local_workflow_${runId}`,
      taskType: "local_workflow",
      runId,
      workflowName: "test-flow",
    });
    expect(outcome.result).toBe("echo:say step");
    expect(outcome.task.status).toBe("completed");
    expect(outcome.task.usage).toEqual({ agents: 1, tokens: 1 });
    expect(outcome.task.progress).toEqual([
      { type: "workflow_phase", title: "Review" },
      { type: "workflow_agent", label: "step", phase: "Review", status: "done" },
      { type: "workflow_log", message: "done" },
    ]);
    expect(lines).toEqual([
      `  event      async_launched     runId=${runId} taskId=local_workflow_${runId}`,
      "  event      task_started       workflow=test-flow phases=Review resume=false",
      "  progress   workflow_phase   title=Review",
      "  progress   workflow_agent   label=step phase=Review status=done",
      "  progress   workflow_log     message=done",
      `  event      task_notification  status=completed agents=1 tokens=1 outputFile=.harness/workflows/${runId}.output.json`,
    ]);
    expect(files()).toEqual(
      [`${runId}.journal.jsonl`, `${runId}.json`, `${runId}.output.json`, "last_run.txt"].sort(),
    );
    expect(JSON.parse(read(`${runId}.json`))).toMatchObject({
      runId,
      workflowName: "test-flow",
      args: {},
      task: { status: "completed", usage: { agents: 1, tokens: 1 } },
    });
    expect(read(`${runId}.output.json`)).toBe('"echo:say step"\n');
    expect(read("last_run.txt")).toBe(`${runId}\n`);
    const [record] = read(`${runId}.journal.jsonl`).trim().split("\n");
    expect(JSON.parse(record!)).toEqual({
      key: core.agentKey("step", "say step", null),
      value: "echo:say step",
    });
    expect(existsSync(path.join(dir, `${runId}.lock`))).toBe(false);
  });

  it("resumes from the journal: nothing runs again, usage 0/0, every call cached", async () => {
    const { runner, prompts } = fakeRunner();
    const { runtime, signal } = setup(runner, [oneStep]);
    const first = await runtime.run(oneStep, { a: 1 }, undefined, signal);
    const again = await runtime.call(
      { name: "test-flow", resume_from_run_id: first.launched.runId },
      signal,
    );
    expect(prompts).toEqual(["say step"]);
    expect(again.result).toBe("echo:say step");
    expect(again.task.usage).toEqual({ agents: 0, tokens: 0 });
    expect(again.task.progress[1]).toEqual({
      type: "workflow_agent",
      label: "step",
      phase: "Review",
      status: "cached",
    });
  });

  it("refuses a resume whose id, workflow, args or journal do not match, touching nothing", async () => {
    const other = script(async () => "other", "other-flow");
    const { runtime, signal, read, dir } = setup(fakeRunner().runner, [oneStep, other]);
    const { launched } = await runtime.run(oneStep, { a: 1 }, undefined, signal);
    const id = launched.runId;
    const names = [`${id}.json`, `${id}.output.json`, `${id}.journal.jsonl`];
    const before = names.map(read);
    const refusal = (input: Parameters<typeof runtime.call>[0]) =>
      runtime.call(input, signal).then(
        () => "ran",
        (error: Error) => error.message,
      );
    expect(await refusal({ name: "test-flow", args: { a: 2 }, resume_from_run_id: id })).toBe(
      "resume args do not match the original run",
    );
    expect(await refusal({ name: "other-flow", resume_from_run_id: id })).toBe(
      "resume runId does not match workflow meta",
    );
    expect(await refusal({ name: "test-flow", resume_from_run_id: "../x" })).toBe(
      'invalid workflow runId "../x"',
    );
    expect(
      await refusal({ name: "test-flow", resume_from_run_id: "wf_test-flow_0000000000000000" }),
    ).toBe("resume snapshot not found for wf_test-flow_0000000000000000");
    writeFileSync(path.join(dir, `${id}.journal.jsonl`), `${before[2]}not json\n`);
    expect(await refusal({ name: "test-flow", resume_from_run_id: id })).toBe(
      "invalid resume journal record at line 2",
    );
    expect(await refusal({ name: "missing" })).toBe("unknown workflow 'missing'");
    expect(names.slice(0, 2).map(read)).toEqual(before.slice(0, 2));
  });

  it("ignores a torn last journal line (a crash mid-write) with a note, and runs that call again", async () => {
    const { runner, prompts } = fakeRunner();
    const two = script(async (w) => [await w.agent("one"), await w.agent("two")]);
    const { runtime, signal, lines, dir } = setup(runner, [two]);
    const { launched } = await runtime.run(two, null, undefined, signal);
    const journal = path.join(dir, `${launched.runId}.journal.jsonl`);
    const [first] = readFileSync(journal, "utf8").split("\n");
    writeFileSync(journal, `${first}\n{"key":"agent-12`);
    const again = await runtime.call(
      { name: "test-flow", resume_from_run_id: launched.runId },
      signal,
    );
    expect(again.task.status).toBe("completed");
    expect(prompts).toEqual(["one", "two", "two"]);
    expect(lines).toContain(
      `[workflow] ${launched.runId}.journal.jsonl: the last line was cut off (a crash mid-write); ignored`,
    );
  });

  it("refuses a second run of an active id, and reclaims a lock whose process is gone", async () => {
    let release = () => {};
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const waits = script(async (w) => {
      await w.agent("first");
      await blocked;
      return "done";
    });
    const { runtime, signal, lines, dir } = setup(fakeRunner().runner, [waits]);
    const running = runtime.run(waits, null, undefined, signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [snapshot] = readdirSync(dir).filter((n) => /^wf_.*_[0-9a-f]{16}\.json$/.test(n));
    const id = snapshot!.slice(0, -5);
    await expect(
      runtime.call({ name: "test-flow", resume_from_run_id: id }, signal),
    ).rejects.toThrow(`workflow run ${id} is already active`);
    release();
    await running;
    writeFileSync(path.join(dir, `${id}.lock`), JSON.stringify({ pid: 2 ** 22 + 7 }));
    const resumed = await runtime.call({ name: "test-flow", resume_from_run_id: id }, signal);
    expect(resumed.task.status).toBe("completed");
    expect(lines).toContain(
      `[workflow] ${id}.lock was left by a process that is gone (pid ${2 ** 22 + 7}): reclaimed`,
    );
  });

  it("/workflows lists runs newest first; a running run nobody holds shows interrupted", async () => {
    const { runtime, signal, dir } = setup(fakeRunner().runner, [oneStep]);
    expect(runtime.describeRuns()).toBe("[workflows] no runs yet");
    const first = await runtime.run(oneStep, null, undefined, signal);
    const old = first.launched.runId;
    // As a killed process leaves it: the snapshot still says running, its lock names a dead pid.
    const snapshot = JSON.parse(readFileSync(path.join(dir, `${old}.json`), "utf8"));
    snapshot.task.status = "running";
    writeFileSync(path.join(dir, `${old}.json`), JSON.stringify(snapshot));
    writeFileSync(path.join(dir, `${old}.lock`), JSON.stringify({ pid: 2 ** 22 + 7 }));
    utimesSync(path.join(dir, `${old}.json`), new Date(1_000_000), new Date(1_000_000));
    const second = await runtime.run(oneStep, null, undefined, signal);
    expect(runtime.describeRuns().split("\n")).toEqual([
      "[workflows] 2 runs, newest first:",
      `  ${second.launched.runId}  test-flow  completed  agents=1 tokens=1`,
      `  ${old}  test-flow  interrupted  agents=1 tokens=1`,
    ]);
  });

  it("asks once more for valid JSON, then fails the run with what was wrong", async () => {
    const { runner, prompts } = fakeRunner(() => "not json");
    const flow = script((w) => w.agent("give", { schema: { type: "object" } }));
    const { runtime, signal } = setup(runner, [flow]);
    const outcome = await runtime.run(flow, null, undefined, signal);
    expect(prompts).toEqual(["give", "give\n\nReturn valid JSON."]);
    expect(outcome.task.status).toBe("failed");
    expect(outcome.result).toEqual({
      error: "agent({schema}) invalid output: output must be an object",
    });
  });

  it("runs at most eight agents at once, and more than one", async () => {
    let active = 0;
    let peak = 0;
    const { runner } = fakeRunner(async () => {
      peak = Math.max(peak, ++active);
      await new Promise((resolve) => setTimeout(resolve, 5));
      active--;
      return "ok";
    });
    const flow = script((w) =>
      w.parallel(Array.from({ length: 24 }, (_, i) => () => w.agent(`call ${i}`))),
    );
    const { runtime, signal } = setup(runner, [flow]);
    const outcome = await runtime.run(flow, null, undefined, signal);
    expect(outcome.task.usage.agents).toBe(24);
    expect(peak).toBeLessThanOrEqual(8);
    expect(peak).toBeGreaterThan(1);
  });

  it("returns parallel and pipeline results in input order, stages without a barrier", async () => {
    const order: string[] = [];
    const delays: Record<string, number> = { slow: 30, fast: 1 };
    const flow = script(async (w) => {
      const both = await w.parallel([
        async () => {
          await new Promise((r) => setTimeout(r, delays.slow));
          return "slow";
        },
        async () => "fast",
      ]);
      const piped = await w.pipeline(
        ["slow", "fast"],
        async (item) => {
          await new Promise((r) => setTimeout(r, delays[item as string]));
          order.push(`s1:${item}`);
          return item;
        },
        async (previous, _item, index) => {
          order.push(`s2:${previous}`);
          return `${previous}@${index}`;
        },
      );
      return { both, piped };
    });
    const { runtime, signal } = setup(fakeRunner().runner, [flow]);
    const outcome = await runtime.run(flow, null, undefined, signal);
    expect(outcome.result).toEqual({ both: ["slow", "fast"], piped: ["slow@0", "fast@1"] });
    expect(order).toEqual(["s1:fast", "s2:fast", "s1:slow", "s2:slow"]);
  });

  it("lets every branch settle before a failure ends the run, and a resume redoes only the failed one", async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let failing = true;
    const calls: string[] = [];
    const { runner } = fakeRunner(async (prompt) => {
      calls.push(prompt);
      if (prompt === "slow") await gate;
      if (prompt === "fail" && failing) throw new Error("agent failed");
      return prompt;
    });
    const flow = script((w) => w.parallel([() => w.agent("slow"), () => w.agent("fail")]));
    const { runtime, signal, read } = setup(runner, [flow]);
    let settled = false;
    const running = runtime.run(flow, null, undefined, signal).then((outcome) => {
      settled = true;
      return outcome;
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(settled).toBe(false);
    release();
    const outcome = await running;
    expect(outcome.result).toEqual({ error: "agent failed" });
    expect(outcome.task.usage).toEqual({ agents: 1, tokens: 1 });
    const id = outcome.launched.runId;
    const values = read(`${id}.journal.jsonl`)
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).value);
    expect(values).toEqual(["slow"]);
    failing = false;
    const again = await runtime.call({ name: "test-flow", resume_from_run_id: id }, signal);
    expect(again.result).toEqual(["slow", "fail"]);
    expect(calls.filter((c) => c === "slow")).toHaveLength(1);
    expect(calls.filter((c) => c === "fail")).toHaveLength(2);
  });

  it("fails a run past its token budget, without journaling that call", async () => {
    const flow = script(async (w) => [await w.agent("a"), await w.agent("b"), await w.agent("c")]);
    const { runtime, signal, read } = setup(fakeRunner().runner, [flow]);
    const outcome = await runtime.run(flow, { budget: 2 }, undefined, signal);
    expect(outcome.result).toEqual({ error: "token budget exceeded" });
    expect(read(`${outcome.launched.runId}.journal.jsonl`).trim().split("\n")).toHaveLength(2);
  });

  it("caps executed agent calls at 1000; replays from the journal do not count", async () => {
    let limit = 1001;
    const flow = script(async (w) => {
      const results = [];
      for (let i = 0; i < limit; i++) results.push(await w.agent(`call ${i}`));
      return results.length;
    });
    const { runtime, signal } = setup(fakeRunner().runner, [flow]);
    const outcome = await runtime.run(flow, null, undefined, signal);
    expect(outcome.result).toEqual({ error: "agent() cap reached (1000)" });
    expect(outcome.task.usage.agents).toBe(1000);
    limit = 1002;
    const id = outcome.launched.runId;
    const again = await runtime.call({ name: "test-flow", resume_from_run_id: id }, signal);
    expect(again.result).toBe(1002);
    expect(again.task.usage.agents).toBe(2);
  });

  it("nests one level: the child shares usage; deeper or unknown workflows fail", async () => {
    const child = script(async (w) => {
      w.phase("Child");
      return w.agent("child call");
    }, "child-flow");
    const deeper = script((w) => w.workflow("child-flow"), "middle-flow");
    const parent = script(async (w) => [
      await w.agent("parent call"),
      await w.workflow("child-flow"),
    ]);
    const { runtime, signal } = setup(fakeRunner().runner, [child, deeper, parent]);
    const outcome = await runtime.run(parent, null, undefined, signal);
    expect(outcome.result).toEqual(["echo:parent call", "echo:child call"]);
    expect(outcome.task.usage.agents).toBe(2);
    expect(outcome.task.progress).toContainEqual({ type: "workflow_phase", title: "Child" });
    const twice = script((w) => w.workflow("middle-flow"));
    expect((await runtime.run(twice, null, undefined, signal)).result).toEqual({
      error: "workflow() nesting is one level only",
    });
    const unknown = script((w) => w.workflow("nope"));
    expect((await runtime.run(unknown, null, undefined, signal)).result).toEqual({
      error: "unknown workflow 'nope'",
    });
  });

  it("review-changes: four audits, a verification per finding, real ones sorted by severity", async () => {
    const findings: Record<string, unknown[]> = {
      correctness: [{ title: "off by one", severity: "low" }],
      security: [
        { title: "injection", severity: "high" },
        { title: "weak hash", severity: "medium" },
      ],
      performance: [],
      style: [{ title: "naming", severity: "low" }],
    };
    const { runner } = fakeRunner((prompt) => {
      const audit = /^Review this change context for (\w+) issues/.exec(prompt);
      if (audit) return { findings: findings[audit[1]!] };
      return { isReal: !prompt.includes("naming"), reason: "checked" };
    });
    const { runtime, signal } = setup(runner, [review.reviewChanges]);
    const outcome = await runtime.call(
      { name: "review-changes", args: { changes: "+ a change" } },
      signal,
    );
    expect(outcome.result).toEqual({
      confirmed: [
        { dimension: "security", title: "injection", severity: "high" },
        { dimension: "security", title: "weak hash", severity: "medium" },
        { dimension: "correctness", title: "off by one", severity: "low" },
      ],
    });
    const phases = outcome.task.progress.filter((p) => p.type === "workflow_phase");
    expect(phases.map((p) => p.title)).toEqual(["Review", "Verify"]);
    const agents = outcome.task.progress.filter((p) => p.type === "workflow_agent");
    expect(agents).toHaveLength(8);
    expect(outcome.task.usage.agents).toBe(8);
    const empty = await runtime.call({ name: "review-changes", args: { changes: " " } }, signal);
    expect(empty.result).toBe("No change context was supplied.");
    const wrong = await runtime.call({ name: "review-changes", args: { changes: 3 } }, signal);
    expect(wrong.result).toEqual({ error: "args.changes must be a string" });
  });
});

// ---------------------------------------------------------------------------------------

describe.concurrent.each(carried(chaptersFrom("s16"), WORKFLOW))(
  "$id workflows through the chapter",
  (chapter) => {
    const edge = edgeCase(chapter, WORKFLOW);

    it("offers Workflow after the 26 tools of s15; a run's agents call the API with no tools", async () => {
      const run = await runChapter(chapter, {
        prompts: ["review it"],
        steps: [
          { when: isWorkflowAgent, repeat: true, reply: reviewAgentAnswer },
          {
            when: userSaid("review it"),
            reply: reply(
              toolUse("Workflow", { name: "review-changes", args: { changes: "+ sql" } }),
            ),
          },
          { when: afterTools, reply: reply(text("reviewed")) },
        ],
      });
      const main = run.requests.filter((r) => (r.tools?.length ?? 0) > 0);
      const names = (main[0]!.tools as Anthropic.Tool[]).map((t) => t.name);
      expect(names.slice(0, 26)).toEqual([...S13_TOOLS, "connect_mcp"]);
      expect(names[26]).toBe("Workflow");
      expect(String(JSON.stringify(main[0]!.system))).toContain(
        "- review-changes: Review changed files across dimensions, verify each finding",
      );
      const agents = run.requests.filter(isWorkflowAgent);
      expect(agents).toHaveLength(5);
      for (const request of agents) {
        expect(request.max_tokens).toBe(2000);
        expect(request.tools).toBeUndefined();
        expect(String(request.messages[0]!.content)).toContain(
          "Return only one JSON object matching this schema:",
        );
      }
      const [result] = lastToolResults(main[1]!);
      const outcome = JSON.parse(String(result!.content));
      expect(outcome.result).toEqual({
        confirmed: [{ dimension: "security", title: "injection", severity: "high" }],
      });
      expect(outcome.task).toMatchObject({ status: "completed", usage: { agents: 5 } });
      expect(run.output).toContain("  event      task_started       workflow=review-changes");
      expect(run.output).toContain("label=verify:security:injection phase=Verify status=done");
      expect(run.output).toMatch(/\[usage\] .*workflow: 5/);
    });

    edge(
      "a Workflow(<name>) deny rule refuses the run; /workflows lists runs newest first",
      async () => {
        const run = await runChapter(chapter, {
          prompts: ["review it", "/workflows"],
          files: {
            ".claude/settings.json": JSON.stringify({
              permissions: { deny: ["Workflow(review-changes)"] },
            }),
          },
          steps: [
            {
              when: userSaid("review it"),
              reply: reply(toolUse("Workflow", { name: "review-changes", args: { changes: "x" } })),
            },
            { when: afterTools, reply: reply(text("denied")) },
          ],
        });
        const [result] = lastToolResults(run.requests.at(-1)!);
        expect(result).toMatchObject({ is_error: true });
        expect(String(result!.content)).toMatch(
          /^Permission denied by deny rule Workflow\(review-changes\)/,
        );
        expect(run.output).toContain("[workflows] no runs yet");
      },
    );

    edge(
      "Ctrl-C stops a run: its journal is kept, and the prompt names the run to resume until it ends",
      async () => {
        let interrupt: (() => void) | undefined;
        const server = await startFakeServer({
          latencyMs: 200,
          model: new ScriptedModel([
            {
              when: isWorkflowAgent,
              repeat: true,
              reply: (r) => {
                // The first agent call presses Ctrl-C, once; its siblings are in flight too.
                const press = interrupt;
                interrupt = undefined;
                press?.();
                return reviewAgentAnswer(r);
              },
            },
            {
              when: userSaid("review it"),
              reply: reply(toolUse("Workflow", { name: "review-changes", args: { changes: "x" } })),
            },
            {
              when: (r) => JSON.stringify(r.messages.at(-1)).includes("next"),
              reply: reply(text("ok")),
            },
            {
              when: userSaid("resume it"),
              reply: (r) => {
                const id = /Interrupted workflow runs: (wf_\S+?)\./.exec(String(r.system))![1];
                return reply(
                  toolUse("Workflow", { name: "review-changes", resume_from_run_id: id }),
                );
              },
            },
            { when: afterTools, reply: reply(text("resumed")) },
            { when: userSaid("after"), reply: reply(text("done")) },
          ]),
        });
        try {
          const run = await runChapter(chapter, {
            prompts: ["review it", "next", "resume it", "after"],
            server,
            onSignal: (handler) => {
              interrupt = handler;
            },
          });
          expect(run.output).toContain("[interrupted]");
          // The next line's request: a cancelled agent call may reach the server after it.
          const next = run.requests.find(
            (r) =>
              (r.tools?.length ?? 0) > 0 && JSON.stringify(r.messages.at(-1)).includes('"next"'),
          )!;
          // The interrupted call's result is the repair's, untouched; the prompt says what to do.
          const [result] = lastToolResults(next);
          expect(result!.content).toBe("Interrupted by the user");
          expect(String(next.system)).toMatch(
            /\n\nInterrupted workflow runs: wf_review-changes_[0-9a-f]{16}\. Their finished agent calls are journaled: call Workflow with resume_from_run_id to continue one\.(\n|$)/,
          );
          // Resumed to its end, the run is no longer named.
          const after = run.requests.filter((r) => (r.tools?.length ?? 0) > 0).at(-1)!;
          expect(String(after.system)).not.toContain("Interrupted workflow runs");
          const dir = path.join(run.workdir, ".harness/workflows");
          const snapshot = readdirSync(dir).find((n) => /^wf_.*[0-9a-f]\.json$/.test(n))!;
          const saved = JSON.parse(readFileSync(path.join(dir, snapshot), "utf8"));
          // The same run, failed by the interrupt, then resumed from its journal to the end.
          expect(saved.task.status).toBe("completed");
          expect(run.output).toContain("interrupted; its journal is kept");
          expect(run.output).toMatch(/task_started .*resume=true/);
          expect(run.output).toContain("ok");
        } finally {
          await server.close();
        }
      },
    );
  },
);
