/**
 * Every chapter's offline demo, in-process: `start` with nothing configured announces the
 * demo and runs the whole script through the real loop, tools and SDK client against the
 * fake server (cli.test.ts starts s01's the way a learner does).
 */
import { existsSync, rmSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { chaptersFrom } from "./chapters.ts";
import { Capture, loadMain } from "./helpers/run.ts";

/**
 * What each demo must show: text that appears only if the chapter's own mechanism ran,
 * and pairs (earlier, later) whose order on screen follows the order of events. A new
 * chapter adds its entry; the test fails for a chapter without one.
 */
const SHOWS: Record<string, { contains: string[]; order?: Array<[string, string]> }> = {
  s01: {
    contains: [
      "[sent to the model] request 2 ends with one user message: a tool_result per tool_use_id",
      '  |       "tool_use_id": "toolu_01Scripted00000000000002",',
    ],
  },
  s02: {
    contains: ["  Edited notes/todo.md", "  Error: Path escapes workspace: ../../etc/passwd"],
  },
  s03: {
    contains: ["[allowed] by allow rule Bash(rm -rf build/cache:*) in .claude/settings.json"],
  },
  s04: {
    contains: ["[hook] PreToolUse (node .claude/hooks/protect-env.mjs) blocked:"],
    order: [["please set DEBUG=1 yourself.", "asks to continue: Before you finish"]],
  },
  s05: { contains: ["[todo] 3 tool rounds without a todo update: reminding the model"] },
  s06: { contains: ["  [sub] > glob(", "[Subagent done]"] },
  s07: { contains: ['> load_skill({"name":"code-review"})'] },
  s08: {
    contains: ["It runs with: L3_COMPACT_PERSIST_THRESHOLD=4000", "  | <persisted-output>"],
    order: [
      ["[compact L3]", "[compact L2]"],
      ["[compact L2]", "[compact L1]"],
      ["[compact L1]", "[compact L4] auto summary"],
      ["[compact L4] auto summary", "[compact L4] /compact summary"],
      ["[compact L4] /compact summary", "[compact reactive]"],
    ],
  },
  s09: {
    contains: ["  | Relevant memory records:", '  |     "source": "short-answers.md",'],
    order: [["Noted: short answers from now on", "[memory] stored 1 record(s)"]],
  },
  s10: {
    contains: [
      "[sent to the model] the create_task results: the IDs exist only now",
      "  [claim] setup database schema -> in_progress (owner: agent)",
      "  Unblocked: ",
    ],
    order: [
      ["[sent to the model] the create_task results", "> update_task("],
      ["[complete] setup database schema", "[unblocked] "],
      ["[unblocked] ", "completed: 1"],
    ],
  },
  s11: {
    contains: [
      "  [Background task bg_0001 started] The result will be collected on a later turn.",
      "  | [text] <task_notification>",
      "bg_0001  completed",
    ],
    order: [
      ["  [background] started bg_0001", "> read_file("],
      ["  4 notes.md", "  [background] collected bg_0001: completed"],
      ["  | [tool_result ", "  | [text] <task_notification>"],
    ],
  },
  s12: {
    contains: [
      "  | Current local time: 2026-03-02 08:59 (Monday, ",
      "  | [text] [Scheduled] Time to stretch: stand up, roll your shoulders",
      "[one-shot, durable]",
      "  No cron jobs.",
    ],
    order: [
      ["  [cron] scheduled cron_", "s12 >> What is scheduled?"],
      ["  [cron] due cron_", "  [cron] delivered cron_"],
      ["One job: the stretch reminder", "  [cron] delivered cron_"],
      ["  [cron] delivered cron_", "  | [text] [Scheduled] Time to stretch"],
      ["  | [text] [Scheduled] Time to stretch", "  No cron jobs."],
    ],
  },
  s13: {
    contains: [
      "  [teammate] alice spawned as writer",
      "  [teammate] bob spawned as writer",
      "  | [Team events]",
      "  [bob] > submit_plan(",
      "  Plan rejected (req_",
      "  Plan approved (req_",
      "  [bus] alice -> lead: (result) hello.txt written.",
      "[wake: ",
      "  [bob]   Unblocked: write index.txt",
      "  [bus] alice -> lead: (shutdown_response) Shutdown acknowledged.",
      "  [bus] bob -> lead: (shutdown_response) Shutdown acknowledged.",
      "[all teammates shut down]",
    ],
    order: [
      ["  [teammate] bob spawned as writer", "[wake: "],
      ["  Plan rejected (req_", "  Plan approved (req_"],
      ["  Plan approved (req_", "  [bob] > write_file("],
      ["  [bob]   Unblocked: write index.txt", " claimed task_"],
      [" claimed task_", "(shutdown_request)"],
      ["  [teammate] bob finished", "[all teammates shut down]"],
    ],
  },
  s14: {
    contains: [
      "  [mcp] connected docs (modern 2026-07-28, 2 tools): search, get_version",
      "  | tools (28): … create_worktree, connect_mcp, mcp__docs__search, mcp__docs__get_version",
      "  | system prompt, last line: Connected MCP servers: docs",
      "  [docs] Found 3 results for 'agent hooks'",
      "  [mcp] connected deploy (legacy 2025-11-25, 2 tools): trigger, status",
      "[denied] Permission denied: approval needed (MCP tool mcp__deploy__trigger) but stdin is not a terminal",
      "deploy: connected (legacy 2025-11-25): mcp__deploy__trigger, mcp__deploy__status",
    ],
    order: [
      ["  [mcp] connected docs", "  | tools (28)"],
      ["  | tools (28)", "> mcp__docs__search("],
      ["  [deploy] web: running (v1.4.2)", "[denied] Permission denied"],
      ["[denied] Permission denied", "s14 >> /mcp"],
    ],
  },
  s15: {
    contains: [
      "[retry] overloaded (529); attempt 2 of 4 in 1.0 s",
      "[fallback] 2 overloaded answers in a row: the rest of this turn uses claude-haiku-4-5",
      "This answer is cut off m\n[retry] the stream ended before the answer did; attempt 2 of 4 in ",
      "This turn started on MODEL_ID again.",
      "[max_tokens] the reply hit 8000 tokens: asking again with 16000",
    ],
    order: [
      ["[fallback] 2 overloaded", "  | claude-haiku-4-5"],
      ["[retry] the stream ended", "The release is on Friday, and"],
      ["s15 >> And which model answers now?", "  | claude-sonnet-4-6"],
      ["[max_tokens] the reply hit 8000", "  | 16000"],
    ],
  },
  s16: {
    contains: [
      "  event      task_started       workflow=review-changes phases=Review,Verify resume=false",
      "  progress   workflow_agent   label=audit:security phase=Review status=done",
      "  progress   workflow_log     message=confirmed 2 real finding(s)",
      "  event      task_started       workflow=review-changes phases=Review,Verify resume=true",
      "  progress   workflow_agent   label=audit:security phase=Review status=cached",
      "status=completed agents=0 tokens=0",
    ],
    order: [
      ["status=done", "Two confirmed findings"],
      ["Two confirmed findings", "status=cached"],
      ["status=cached", "status=completed agents=0 tokens=0"],
    ],
  },
  s17: {
    contains: [
      "[goal] set: tests/smoke.sh prints OK",
      "[goal] block: the conversation shows no output of tests/smoke.sh",
      "[goal] block: tests/smoke.sh printed NOT OK and exited with status 1",
      "[goal] achieved: tests/smoke.sh printed OK",
      "Goal achieved: tests/smoke.sh prints OK\nReason: tests/smoke.sh printed OK",
    ],
    order: [
      ["[goal] block: the conversation", "NOT OK"],
      ["[goal] block: tests/smoke.sh printed NOT OK", "[goal] achieved"],
      ["[goal] achieved", "s17 >> /goal\nGoal achieved"],
    ],
  },
};

/** Lines only an earlier chapter's demo should show, and the first chapter that drops them. */
const CHATTER: Array<{ line: RegExp; from: string }> = [
  { line: /^\[hook\] \w+\(\w+Hook\)/m, from: "s05" },
  { line: /^\[todo\]/m, from: "s06" },
  { line: /^\[skills\]/m, from: "s08" },
];

describe.concurrent.each(chaptersFrom("s01"))("$id offline demo", (chapter) => {
  it("runs when no key, token or base URL is configured, and finishes its script", async () => {
    const main = await loadMain(chapter);
    const stdout = new Capture();
    const code = await main({
      argv: [],
      stdin: Readable.from(["this line is ignored\n"]),
      stdout,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1" },
    });
    expect(code).toBe(0);
    const out = stdout.text;
    expect(out).toContain("No model configured: running this chapter's offline demo.");
    expect(out).toContain(`Offline demo (${chapter.id})`);
    expect(out).toContain(`${chapter.id}: ${chapter.title}`);
    expect(out).not.toMatch(/API error|scripted model: no step left|connection error/);
    expect(out).not.toContain("this line is ignored");
    const shows = SHOWS[chapter.id];
    expect(shows, `SHOWS has no entry for ${chapter.id}`).toBeDefined();
    for (const line of shows!.contains) expect(out).toContain(line);
    for (const [earlier, later] of shows!.order ?? []) {
      expect(out.indexOf(earlier), earlier).toBeGreaterThanOrEqual(0);
      expect(out.indexOf(later), `${later} after ${earlier}`).toBeGreaterThan(out.indexOf(earlier));
    }
    const n = Number(chapter.id.slice(1));
    for (const { line, from } of CHATTER) {
      if (n >= Number(from.slice(1))) expect(out).not.toMatch(line);
    }
    // A prompt appears only with the line it answers: none is left waiting at the end.
    expect(out).not.toMatch(new RegExp(`${chapter.id} >> \\n`));
    const kept = /workspace is kept at (\S+)/.exec(out)?.[1];
    expect(kept && existsSync(path.join(kept, ".harness", "logs"))).toBe(true);
    rmSync(kept!, { recursive: true, force: true });
  });
});
