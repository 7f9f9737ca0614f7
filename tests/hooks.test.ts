/**
 * Hooks, against every chapter from s04: the bus's ordering and results, the permission
 * pipeline before every PreToolUse hook, the Stop continuation cap, and command hooks from
 * .claude/settings.json in Claude Code's shape.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { type LoopEvent, nullLog, type SessionLog, type ToolDefinition, toolMap } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as CommandHooksModule from "../chapters/s04-hooks/src/command-hooks.ts";
import type * as HooksModule from "../chapters/s04-hooks/src/hooks.ts";
import type * as SettingsModule from "../chapters/s04-hooks/src/settings.ts";
import {
  carried,
  casesFor,
  chaptersFrom,
  edgeCase,
  importChapter,
  moduleVersions,
  runsEdgeCases,
} from "./chapters.ts";
import { runContext } from "./helpers/context.ts";
import { isAlive } from "./helpers/process.ts";
import {
  afterTools,
  baseTools,
  lastToolResults,
  runChapter,
  sessionLog,
  tempWorkspace,
  userSaid,
  writeFiles,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;

/** A settings file with command hooks: `{ Event: [[matcher, command, timeout?], …] }`. */
function settingsWith(hooks: Record<string, Array<[string | null, string, number?]>>) {
  const section: Record<string, unknown[]> = {};
  for (const [event, list] of Object.entries(hooks)) {
    section[event] = list.map(([matcher, command, timeout]) => ({
      ...(matcher === null ? {} : { matcher }),
      hooks: [{ type: "command", command, ...(timeout ? { timeout } : {}) }],
    }));
  }
  return { ".claude/settings.json": JSON.stringify({ hooks: section }) };
}

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(
  moduleVersions("s04", ["hooks.ts", "command-hooks.ts", "settings.ts", "bash.ts", "tools.ts"]).map(
    (c) => c.id,
  ),
);
// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the rest of that block runs on every chapter (runsEdgeCases in chapters.ts). s08's
// compact-layers.ts decides what the model gets after largeOutputHook has seen a result.
const HOOKS = moduleVersions("s04", [
  "hooks.ts",
  "command-hooks.ts",
  "settings.ts",
  "bash.ts",
  "compact-layers.ts",
]);

describe.each(carried(chaptersFrom("s04"), MODULE_CHAPTERS, HOOKS))("$id hooks", (chapter) => {
  let hooks: typeof HooksModule;
  let commandHooks: typeof CommandHooksModule;
  let settings: typeof SettingsModule;
  let base: ToolDefinition[];
  const wholeResults = chaptersFrom("s04", "large results reach the model whole").some(
    (c) => c.id === chapter.id,
  );
  const showsPasses = chaptersFrom("s04", "sample hooks print what they do").some(
    (c) => c.id === chapter.id,
  );
  const edge = edgeCase(chapter, HOOKS);
  beforeAll(async () => {
    hooks = await importChapter<typeof HooksModule>(chapter, "hooks.ts");
    commandHooks = await importChapter<typeof CommandHooksModule>(chapter, "command-hooks.ts");
    settings = await importChapter<typeof SettingsModule>(chapter, "settings.ts");
    base = await baseTools(chapter);
  });

  function bus(log: SessionLog = nullLog()) {
    const events: LoopEvent[] = [];
    const workdir = tempWorkspace("bus");
    const instance = new hooks.HookBus({
      workdir,
      emit: (event) => events.push(event),
      log,
    });
    const context = runContext({
      workdir,
      tools: toolMap(base),
    });
    const printed = () => events.map((e) => (e.type === "notice" ? e.text : "")).filter(Boolean);
    return { bus: instance, context, printed, workdir };
  }
  const call = { id: "toolu_1", name: "bash", input: { command: "echo hi" } };

  if (MODULE_CHAPTERS.has(chapter.id)) {
    describe("a call as Claude Code names it", () => {
      it("maps each tool Claude Code has, and leaves the rest as they are", () => {
        const run = { workdir: "/w", tools: toolMap(base) };
        const view = (name: string, input: Record<string, unknown>) =>
          hooks.claudeCodeCall({ id: "toolu_1", name, input }, run);
        expect(view("bash", { command: "ls" })).toEqual({
          tool_name: "Bash",
          tool_input: { command: "ls" },
        });
        expect(view("read_file", { path: "a/b.txt", offset: 0, limit: 5 })).toEqual({
          tool_name: "Read",
          tool_input: { file_path: "/w/a/b.txt", offset: 1, limit: 5 },
        });
        expect(view("read_file", { path: "/etc/hosts" })).toEqual({
          tool_name: "Read",
          tool_input: { file_path: "/etc/hosts" },
        });
        expect(view("glob", { pattern: "**/*.ts" })).toEqual({
          tool_name: "Glob",
          tool_input: { pattern: "**/*.ts", path: "/w" },
        });
        // A tool Claude Code lacks (or one this chapter does not know) keeps its own shape.
        expect(view("mcp__docs__search", { q: "x" })).toEqual({
          tool_name: "mcp__docs__search",
          tool_input: { q: "x" },
        });
      });
    });

    describe("the bus", () => {
      it("runs hooks in registration order and stops at the first result", async () => {
        const { bus: b, context } = bus();
        const called: string[] = [];
        b.register("PreToolUse", "a", () => {
          called.push("a");
          return null;
        });
        b.register("PreToolUse", "b", async () => {
          called.push("b");
          return "blocked by b";
        });
        b.register("PreToolUse", "c", () => {
          called.push("c");
          return "never";
        });
        expect(await b.preToolUse(call, context)).toEqual({
          refuse: { content: "blocked by b", isError: true },
        });
        expect(called).toEqual(["a", "b"]);
      });

      it("treats an empty string as no result: it neither blocks nor short-circuits", async () => {
        const { bus: b, context } = bus();
        let reached = false;
        b.register("PreToolUse", "empty", () => "");
        b.register("PreToolUse", "next", () => {
          reached = true;
          return null;
        });
        expect(await b.preToolUse(call, context)).toEqual({ call });
        expect(reached).toBe(true);
      });

      it("fails closed when a PreToolUse hook throws, and only reports other hooks' failures", async () => {
        const { bus: b, context, printed } = bus();
        b.register("PreToolUse", "broken", () => {
          throw new Error("boom");
        });
        expect(await b.preToolUse(call, context)).toEqual({
          refuse: { content: "Error: PreToolUse hook broken failed: boom", isError: true },
        });
        b.register("PostToolUse", "broken", () => {
          throw new Error("later");
        });
        const output = { content: "hi" };
        expect(await b.postToolUse(call, output, context)).toEqual(output);
        expect(printed()).toContain(
          "[hook] PostToolUse(broken): PostToolUse hook broken failed: later",
        );
      });

      it("caps forced Stop continuations per loop run and tells hooks when one is active", async () => {
        const { bus: b, printed, context } = bus();
        const active: boolean[] = [];
        b.register("Stop", "always", (_messages, hookContext) => {
          active.push(hookContext.stopHookActive);
          return "keep going";
        });
        const seams = b.loopSeams();
        const stop = () => seams.onStop!([], {} as Anthropic.Message, context);
        const answers = [await stop(), await stop(), await stop(), await stop()];
        expect(answers).toEqual(["keep going", "keep going", "keep going", null]);
        expect(active).toEqual([false, true, true, true]);
        expect(printed()).toContain(
          `[hook] Stop: continuation cap (${hooks.MAX_STOP_CONTINUATIONS}) reached; stopping`,
        );
        // A new loop run starts from zero.
        expect(await b.loopSeams().onStop!([], {} as Anthropic.Message, context)).toBe(
          "keep going",
        );
      });

      it("parses command hooks in Claude Code's shape and reports what it cannot use", () => {
        const ws = tempWorkspace("parse");
        writeFiles(ws, {
          ".claude/settings.json": JSON.stringify({
            hooks: {
              PreToolUse: [
                { matcher: "Bash", hooks: [{ type: "command", command: "a.sh", timeout: 5 }] },
                { matcher: "(", hooks: [{ type: "command", command: "bad-regex.sh" }] },
                { hooks: [{ type: "prompt", prompt: "x" }, { type: "command" }] },
                {
                  matcher: "Bash",
                  hooks: [
                    { type: "command", command: "commit.sh", if: "Bash(git commit:*)" },
                    { type: "command", command: "push.sh", async: true, asyncRewake: true },
                  ],
                },
              ],
              SessionStart: [{ hooks: [{ type: "command", command: "s.sh" }] }],
              Stop: { not: "a list" },
              SubagentStop: [
                { matcher: "*", hooks: [{ type: "command", command: "sub.sh", timeout: -1 }] },
              ],
            },
          }),
          ".claude/settings.local.json": JSON.stringify({
            hooks: {
              PostToolUse: [{ matcher: "", hooks: [{ type: "command", command: "b.sh" }] }],
            },
          }),
        });
        const { hooks: found, problems } = commandHooks.parseCommandHooks(
          settings.loadSettings(ws).files,
        );
        expect(found).toEqual([
          {
            event: "PreToolUse",
            matcher: "Bash",
            command: "a.sh",
            timeoutS: 5,
            file: ".claude/settings.json",
          },
          {
            event: "PostToolUse",
            matcher: null,
            command: "b.sh",
            timeoutS: 60,
            file: ".claude/settings.local.json",
          },
        ]);
        const file = path.join(ws, ".claude/settings.json");
        expect(problems).toEqual([
          `${file}: hooks.PreToolUse[1].matcher "(" is not a valid pattern; skipped`,
          `${file}: hooks.PreToolUse[2].hooks[0]: type "prompt" is not supported (only "command"); skipped`,
          `${file}: hooks.PreToolUse[2].hooks[1]: "command" must be a non-empty string; skipped`,
          `${file}: hooks.PreToolUse[3].hooks[0]: "if" is not supported here; skipped`,
          `${file}: hooks.PreToolUse[3].hooks[1]: "async", "asyncRewake" are not supported here; skipped`,
          `${file}: hooks.SessionStart is not an event this chapter has; skipped`,
          `${file}: hooks.Stop must be a list; skipped`,
          `${file}: hooks.SubagentStop[0].hooks[0]: "timeout" must be a positive number of seconds; skipped`,
        ]);
      });
    });
  }

  // Each test runs its own chapter, workspace and server: they wait side by side.
  describe.concurrent("through the chapter", () => {
    it("runs PreToolUse before the gates: logHook notes both calls, and the deny list still blocks with s03's text", async () => {
      const run = await runChapter(chapter, {
        prompts: ["go"],
        steps: [
          {
            reply: reply(
              toolUse("bash", { command: "sudo ls" }),
              toolUse("bash", { command: "echo ok" }),
            ),
          },
          { when: afterTools, reply: reply(text("done")) },
        ],
      });
      const results = lastToolResults(run.requests[1]!);
      expect(results[0]?.content).toBe(
        "Permission denied by the deny list: 'sudo' is never allowed.",
      );
      expect(results[1]?.content).toBe("ok");
      expect(run.output).toContain("[blocked] Permission denied by the deny list");
      // What the sample hooks noted: on the terminal in s04, in the session log from s05.
      const notes = showsPasses ? run.output : sessionLog(run.workdir).api;
      const logHookNote = showsPasses ? /\[hook\] PreToolUse\(logHook\)/g : /"hook":"logHook"/g;
      expect(notes.match(logHookNote)).toHaveLength(2);
      if (showsPasses) {
        expect(run.output.indexOf("[hook] PreToolUse(logHook)")).toBeLessThan(
          run.output.indexOf("[blocked]"),
        );
        expect(run.output).toContain("[hook] UserPromptSubmit(contextInjectHook): working in");
        expect(run.output).toContain("[hook] Stop(summaryHook): session used 2 tool calls");
      } else {
        expect(run.output).not.toContain("[hook]");
        expect(notes).toContain('"hook":"contextInjectHook","outcome":"note","text":"working in');
        expect(notes).toContain(
          '"hook":"summaryHook","outcome":"note","text":"session used 2 tool calls"',
        );
      }
    });

    it("gives a command hook the call as JSON on stdin, and CLAUDE_PROJECT_DIR", async () => {
      const capture = (name: string) => `cat > "$CLAUDE_PROJECT_DIR/${name}.json"`;
      const run = await runChapter(chapter, {
        files: settingsWith({
          UserPromptSubmit: [[null, capture("prompt")]],
          PreToolUse: [["Bash", capture("pre")]],
          PostToolUse: [["bash", capture("post")]],
          Stop: [[null, capture("stop")]],
        }),
        prompts: ["inspect"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo seen" }, "toolu_seen")) },
          { when: afterTools, reply: reply(text("done")) },
        ],
      });
      const read = (name: string) =>
        JSON.parse(readFileSync(path.join(run.workdir, `${name}.json`), "utf8")) as Record<
          string,
          unknown
        >;
      const pre = read("pre");
      expect(pre).toMatchObject({
        cwd: run.workdir,
        hook_event_name: "PreToolUse",
        permission_mode: "default",
        tool_name: "Bash",
        tool_input: { command: "echo seen" },
        tool_use_id: "toolu_seen",
      });
      expect(pre.session_id).toMatch(/^[0-9a-f]{16}$/);
      expect(existsSync(String(pre.transcript_path))).toBe(true);
      expect(pre.transcript_path).toBe(
        path.join(run.workdir, ".harness", "logs", `${String(pre.session_id)}.jsonl`),
      );
      expect(read("post")).toMatchObject({ hook_event_name: "PostToolUse", tool_response: "seen" });
      expect(read("prompt")).toMatchObject({
        hook_event_name: "UserPromptSubmit",
        prompt: "inspect",
      });
      expect(read("stop")).toMatchObject({ hook_event_name: "Stop", stop_hook_active: false });
      expect(run.output).toContain(
        '[hook] PreToolUse (matcher Bash): cat > "$CLAUDE_PROJECT_DIR/pre.json"',
      );
    });

    it("gives hooks written for Claude Code its tool names, field names and absolute paths", async () => {
      // A validator in the shape of Claude Code's documentation: it checks tool_name.
      const validator =
        "node -e \"const i=JSON.parse(require('fs').readFileSync(0,'utf8'));" +
        "if(i.tool_name==='Bash'&&/\\bgrep\\b/.test(i.tool_input.command)){" +
        "console.error('Use rg instead of grep');process.exit(2)}\"";
      const capture = '(cat; echo) >> "$CLAUDE_PROJECT_DIR/edits.jsonl"';
      const run = await runChapter(chapter, {
        files: {
          ...settingsWith({
            PreToolUse: [["Bash", validator]],
            PostToolUse: [["Edit|Write", capture]],
          }),
          "notes.txt": "one\ntwo\n",
        },
        prompts: ["go"],
        steps: [
          {
            reply: reply(
              toolUse("bash", { command: "grep -r two ." }),
              toolUse("write_file", { path: "src/new.txt", content: "hello" }),
              toolUse("edit_file", { path: "notes.txt", old_text: "two", new_text: "2" }),
              toolUse("read_file", { path: "notes.txt", offset: 1 }),
            ),
          },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      const results = lastToolResults(run.requests[1]!);
      expect(results[0]).toMatchObject({
        content: expect.stringContaining("Use rg instead of grep"),
        is_error: true,
      });
      const seen = readFileSync(path.join(run.workdir, "edits.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(seen).toMatchObject([
        {
          tool_name: "Write",
          tool_input: { file_path: path.join(run.workdir, "src/new.txt"), content: "hello" },
        },
        {
          tool_name: "Edit",
          tool_input: {
            file_path: path.join(run.workdir, "notes.txt"),
            old_string: "two",
            new_string: "2",
          },
        },
      ]);
      // The Read call matched neither hook: the matcher reads Claude Code's names too.
      expect(seen).toHaveLength(2);
    });

    it("keeps a transcript in Claude Code's shape that a Stop hook can read the answer from", async () => {
      // As Claude Code's published Stop hooks do: the last line whose role is assistant.
      const lastAnswer =
        "node -e \"const i=JSON.parse(require('fs').readFileSync(0,'utf8'));" +
        "const lines=require('fs').readFileSync(i.transcript_path,'utf8').trim().split('\\n');" +
        'const last=lines.filter(l=>l.includes(\'\\"role\\":\\"assistant\\"\')).pop();' +
        "const text=JSON.parse(last).message.content.filter(b=>b.type==='text').map(b=>b.text).join('');" +
        "require('fs').writeFileSync('last-answer.txt',text)\"";
      const run = await runChapter(chapter, {
        files: settingsWith({ Stop: [[null, lastAnswer]] }),
        prompts: ["check it"],
        steps: [
          {
            reply: reply(
              text("Looking."),
              toolUse("bash", { command: "echo seen # sk-secret-test-key-123" }),
            ),
          },
          { when: afterTools, reply: reply(text("All "), text("checked.")) },
        ],
        // The key reaches the tool call: like the session log, the transcript redacts it.
        env: { ANTHROPIC_API_KEY: "sk-secret-test-key-123" },
      });
      expect(readFileSync(path.join(run.workdir, "last-answer.txt"), "utf8")).toBe("All checked.");
      const [file] = readdirSync(path.join(run.workdir, ".harness", "logs")).filter((name) =>
        /^[0-9a-f]{16}\.jsonl$/.test(name),
      );
      const written = readFileSync(path.join(run.workdir, ".harness", "logs", file!), "utf8");
      expect(written).not.toContain("sk-secret-test-key-123");
      expect(written).toContain("echo seen # [redacted]");
      const lines = written
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((line) => line.type)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(lines[0]).toMatchObject({
        message: { role: "user", content: expect.stringContaining("check it") },
        parentUuid: null,
        cwd: run.workdir,
      });
      expect(lines[2]).toMatchObject({
        message: { role: "user", content: [{ type: "tool_result", content: "seen" }] },
        parentUuid: lines[1]!.uuid,
      });
    });

    it("blocks on exit code 2 with stderr as the reason the model reads", async () => {
      const run = await runChapter(chapter, {
        files: settingsWith({ PreToolUse: [["Bash", "echo 'no shell today' >&2; exit 2"]] }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "touch made.txt" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(lastToolResults(run.requests[1]!)[0]).toMatchObject({
        content: "Blocked by PreToolUse hook (echo 'no shell today' >&2; exit 2): no shell today",
        is_error: true,
      });
      expect(existsSync(path.join(run.workdir, "made.txt"))).toBe(false);
      expect(run.output).toContain(
        "[hook] PreToolUse (echo 'no shell today' >&2; exit 2) blocked: no shell today",
      );
    });

    it.each(
      casesFor(
        chapter,
        [
          ['echo \'{"decision":"block","reason":"json says no"}\'', "json says no"],
          [
            'echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy"}}\'',
            "policy",
          ],
        ] as Array<[string, string]>,
        HOOKS,
      ),
    )("blocks on exit 0 with blocking JSON: %s", async (command, reason) => {
      const run = await runChapter(chapter, {
        files: settingsWith({ PreToolUse: [[null, command]] }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo x" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(
        `Blocked by PreToolUse hook (${command}): ${reason}`,
      );
    });

    edge("an allow decision does not end the review: a later hook's block still wins", async () => {
      const mark = (n: number) => `echo ${n} >> "$CLAUDE_PROJECT_DIR/fired.txt"`;
      const run = await runChapter(chapter, {
        files: settingsWith({
          PreToolUse: [
            [null, `${mark(1)}; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`],
            [null, `${mark(2)}; echo 'second hook says no' >&2; exit 2`],
          ],
        }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo ran > ran.txt" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(readFileSync(path.join(run.workdir, "fired.txt"), "utf8")).toBe("1\n2\n");
      expect(lastToolResults(run.requests[1]!)[0]?.content).toMatch(
        /^Blocked by PreToolUse hook \(.*\): second hook says no$/,
      );
      expect(existsSync(path.join(run.workdir, "ran.txt"))).toBe(false);
    });

    edge("reports invalid output and other exit codes, and goes on", async () => {
      const run = await runChapter(chapter, {
        files: settingsWith({
          PreToolUse: [
            [null, "echo '{not json'"],
            [null, "echo 'oops' >&2; exit 1"],
          ],
        }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo fine" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(run.output).toContain(
        "[hook] echo '{not json': invalid hook output (not JSON); ignored",
      );
      expect(run.output).toContain(
        "[hook] echo 'oops' >&2; exit 1 failed (exit status 1): oops; ignored",
      );
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe("fine");
      const log = sessionLog(run.workdir).api;
      expect(log).toContain('"outcome":"invalid output"');
      expect(log).toContain('"outcome":"failed"');
    });

    edge("matches tool names whole, in the course's or Claude Code's spelling", async () => {
      const mark = (name: string) => `echo ${name} >> "$CLAUDE_PROJECT_DIR/fired.txt"`;
      const run = await runChapter(chapter, {
        files: settingsWith({
          PreToolUse: [
            ["Bash", mark("Bash")],
            ["Edit|Write", mark("EditWrite")],
            ["read_file", mark("read_file")],
            ["Rea", mark("partial")],
            ["*", mark("star")],
          ],
        }),
        prompts: ["go"],
        steps: [
          {
            reply: reply(
              toolUse("read_file", { path: "a.txt" }),
              toolUse("write_file", { path: "b.txt", content: "b" }),
            ),
          },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(readFileSync(path.join(run.workdir, "fired.txt"), "utf8").split("\n")).toEqual([
        "read_file",
        "star",
        "EditWrite",
        "star",
        "",
      ]);
    });

    it("adds a PostToolUse block to the result as feedback (the tool already ran)", async () => {
      const run = await runChapter(chapter, {
        files: settingsWith({ PostToolUse: [["Bash", "echo 'lint failed' >&2; exit 2"]] }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo built" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(
        "built\nPostToolUse hook feedback: lint failed",
      );
    });

    it("adds a PostToolUse hook's additionalContext after the result; plain stdout stays out", async () => {
      const context = {
        hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "3 files changed" },
      };
      const run = await runChapter(chapter, {
        files: settingsWith({
          PostToolUse: [
            ["Bash", "echo 'just a log line'"],
            ["Bash", `echo '${JSON.stringify(context)}'`],
          ],
        }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo built" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(
        "built\nPostToolUse hook context: 3 files changed",
      );
    });

    it("UserPromptSubmit: a block drops the line; plain stdout joins the prompt as context", async () => {
      const run = await runChapter(chapter, {
        files: settingsWith({
          UserPromptSubmit: [
            [
              null,
              'grep -q secret && { echo "no secrets in prompts" >&2; exit 2; }; echo "branch: main"',
            ],
          ],
        }),
        prompts: ["my secret is 42", "hello"],
        steps: [{ reply: reply(text("hi")) }],
      });
      expect(run.requests).toHaveLength(1);
      expect(run.requests[0]!.messages).toEqual([
        {
          role: "user",
          content: [
            { type: "text", text: "hello" },
            { type: "text", text: "branch: main" },
          ],
        },
      ]);
      expect(run.output).toContain("[hook] prompt not sent: no secrets in prompts");
    });

    it("continue: false stops what is under way, its stopReason for the user only; systemMessage is shown", async () => {
      // Scripts in files: the commands the model may see name no reason.
      const script = (json: object) => `cat > /dev/null; echo '${JSON.stringify(json)}'\n`;
      const run = await runChapter(chapter, {
        files: {
          ...settingsWith({
            UserPromptSubmit: [[null, "sh .claude/hooks/prompt.sh"]],
            PreToolUse: [["Bash", "sh .claude/hooks/quota.sh"]],
            Stop: [[null, "sh .claude/hooks/stop.sh"]],
          }),
          ".claude/hooks/prompt.sh": `grep -q later && echo '${JSON.stringify({ continue: false, stopReason: "Maintenance window", systemMessage: "Heads up" })}' || true\n`,
          ".claude/hooks/quota.sh": script({ continue: false, stopReason: "quota reached" }),
          ".claude/hooks/stop.sh": script({
            decision: "block",
            reason: "one more pass",
            continue: false,
            stopReason: "enough for today",
          }),
        },
        prompts: ["do it later", "go", "again"],
        steps: [
          {
            reply: reply(
              toolUse("bash", { command: "touch made.txt" }, "toolu_1"),
              toolUse("bash", { command: "touch other.txt" }, "toolu_2"),
            ),
          },
          { when: userSaid("again"), reply: reply(text("done")) },
        ],
      });
      // The first line never reached the model; the second's run halted after one round,
      // without another model call; the third went on from the repaired history.
      expect(run.output).toContain("[hook] Heads up");
      expect(run.output).toContain("[hook] prompt not sent: Maintenance window");
      expect(run.requests).toHaveLength(2);
      expect(JSON.stringify(run.requests[0]!.messages)).not.toContain("later");
      expect(existsSync(path.join(run.workdir, "made.txt"))).toBe(false);
      const [result, after] = run.requests[1]!.messages[2]!
        .content as Anthropic.ToolResultBlockParam[];
      expect(result).toMatchObject({ is_error: true });
      expect(result!.content).toBe("Stopped by PreToolUse hook (sh .claude/hooks/quota.sh)");
      expect(after).toMatchObject({
        tool_use_id: "toolu_2",
        content: "Not run: the run was halted before this call.",
        is_error: true,
      });
      expect(JSON.stringify(run.requests)).not.toContain("quota reached");
      expect(run.output).toContain("[hook] PreToolUse: quota reached");
      // continue: false wins over decision: block at Stop: no continuation.
      expect(run.output).toContain("[hook] Stop: enough for today");
      expect(JSON.stringify(run.requests)).not.toContain("one more pass");
    });

    it("permissionDecision allow runs a call a built-in rule would ask about; deny and ask rules still hold", async () => {
      const allow = {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "allow",
          permissionDecisionReason: "cleanup is fine",
        },
      };
      const run = await runChapter(chapter, {
        files: {
          ".claude/settings.json": JSON.stringify({
            permissions: { ask: ["Bash(rm keep.txt)"] },
            hooks: {
              PreToolUse: [
                {
                  matcher: "Bash",
                  hooks: [{ type: "command", command: "sh .claude/hooks/allow.sh" }],
                },
              ],
            },
          }),
          ".claude/hooks/allow.sh": `cat > /dev/null; echo '${JSON.stringify(allow)}'\n`,
          "old.txt": "old",
          "keep.txt": "keep",
        },
        prompts: ["go"],
        steps: [
          {
            reply: reply(
              toolUse("bash", { command: "rm old.txt" }),
              toolUse("bash", { command: "rm keep.txt" }),
              toolUse("bash", { command: "sudo ls" }),
            ),
          },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(existsSync(path.join(run.workdir, "old.txt"))).toBe(false);
      expect(existsSync(path.join(run.workdir, "keep.txt"))).toBe(true);
      expect(run.output).toContain(
        "[allowed] by PreToolUse hook (sh .claude/hooks/allow.sh): cleanup is fine (Potentially destructive command: rm)",
      );
      const [removed, kept, sudo] = lastToolResults(run.requests[1]!);
      expect(removed).toMatchObject({ content: "(no output)" });
      expect(kept?.content).toMatch(
        /^Permission denied: approval needed \(ask rule Bash\(rm keep\.txt\)/,
      );
      expect(sudo?.content).toBe("Permission denied by the deny list: 'sudo' is never allowed.");
      // The reason is the user's, never the model's.
      expect(JSON.stringify(run.requests)).not.toContain("cleanup is fine");
    });

    edge("permissionDecision ask asks for a call nothing else would ask about", async () => {
      const ask = {
        hookSpecificOutput: {
          permissionDecision: "ask",
          permissionDecisionReason: "confirm echoes",
        },
      };
      const run = await runChapter(chapter, {
        files: settingsWith({
          PreToolUse: [["Bash", `cat > /dev/null; echo '${JSON.stringify(ask)}'`]],
        }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo hi > hi.txt" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(existsSync(path.join(run.workdir, "hi.txt"))).toBe(false);
      expect(lastToolResults(run.requests[1]!)[0]?.content).toMatch(
        /^Permission denied: approval needed \(PreToolUse hook \(.*\) asks: confirm echoes\) but stdin is not a terminal/,
      );
    });

    it("updatedInput replaces the input in Claude Code's shape; a bad one is refused with the tool's own message", async () => {
      const rewrite = (input: object) =>
        `cat > /dev/null; echo '${JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", updatedInput: input } })}'`;
      const workdir = tempWorkspace(chapter.id);
      const run = await runChapter(chapter, {
        workdir,
        files: settingsWith({
          PreToolUse: [
            [
              "Write",
              rewrite({ file_path: path.join(workdir, "safe", "out.txt"), content: "rewritten" }),
            ],
            ["Edit", rewrite({ file_path: "a.txt", old_string: 5, new_string: "x" })],
          ],
        }),
        prompts: ["go"],
        steps: [
          {
            reply: reply(
              toolUse("write_file", { path: "out.txt", content: "original" }),
              toolUse("edit_file", { path: "a.txt", old_text: "a", new_text: "b" }),
            ),
          },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(existsSync(path.join(workdir, "out.txt"))).toBe(false);
      expect(readFileSync(path.join(workdir, "safe", "out.txt"), "utf8")).toBe("rewritten");
      expect(run.output).toMatch(
        /\[hook\] PreToolUse hook \(.*\) changed the input: \{"path":".*safe\/out\.txt","content":"rewritten"\}/,
      );
      expect(lastToolResults(run.requests[1]!)[1]).toMatchObject({
        content:
          "Error: Invalid input for edit_file: old_text must be a string (the input as a review rewrote it)",
        is_error: true,
      });
    });

    edge("PostToolUse continue: false halts the run once the round's results are in", async () => {
      const run = await runChapter(chapter, {
        files: settingsWith({
          PostToolUse: [
            [
              "Bash",
              `cat > /dev/null; echo '${JSON.stringify({ continue: false, stopReason: "tests failed" })}'`,
            ],
          ],
        }),
        prompts: ["go", "again"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo built" })) },
          { when: userSaid("again"), reply: reply(text("ok")) },
        ],
      });
      expect(run.requests).toHaveLength(2);
      expect(run.output).toContain("[hook] PostToolUse: tests failed");
      expect(run.requests[1]!.messages[2]).toEqual({
        role: "user",
        content: [expect.objectContaining({ type: "tool_result", content: "built" })],
      });
    });

    edge(
      "a command Stop hook has no cap, as in Claude Code: the turn goes on while it blocks, stop_hook_active after the first",
      async () => {
        const blocks = hooks.MAX_STOP_CONTINUATIONS + 2;
        // Blocks `blocks` times (the count in a file), then lets the turn end.
        const command = [
          "cat >> inputs.jsonl; echo >> inputs.jsonl",
          "n=$(( $(cat n 2>/dev/null || echo 0) + 1 )); echo $n > n",
          `if [ $n -le ${blocks} ]; then echo "not yet $n" >&2; exit 2; fi`,
        ].join("; ");
        const run = await runChapter(chapter, {
          files: settingsWith({ Stop: [[null, command]] }),
          prompts: ["first"],
          steps: Array.from({ length: blocks + 1 }, () => ({
            when: () => true,
            reply: reply(text("answer")),
          })),
        });
        expect(run.requests).toHaveLength(blocks + 1);
        expect(run.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "not yet 1" });
        expect(run.requests[blocks]!.messages.at(-1)).toEqual({
          role: "user",
          content: `not yet ${blocks}`,
        });
        const inputs = readFileSync(path.join(run.workdir, "inputs.jsonl"), "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line).stop_hook_active);
        expect(inputs).toEqual([false, ...Array.from({ length: blocks }, () => true)]);
        expect(run.output).not.toContain("continuation cap");
        expect(run.model.unmatched).toHaveLength(0);
      },
    );

    it("shows an answer a Stop hook rejects before the hook's message, then the next answer", async () => {
      const run = await runChapter(chapter, {
        files: settingsWith({
          Stop: [[null, "test -f once && exit 0; touch once; echo 'list the files' >&2; exit 2"]],
        }),
        prompts: ["go"],
        steps: [
          { when: (r: Request) => r.messages.length === 1, reply: reply(text("first answer")) },
          { reply: reply(text("second answer")) },
        ],
      });
      const out = run.output;
      const rejected = out.indexOf("first answer");
      const hook = out.indexOf("asks to continue: list the files");
      expect(rejected).toBeGreaterThan(-1);
      expect(hook).toBeGreaterThan(rejected);
      expect(out.indexOf("second answer")).toBeGreaterThan(hook);
      expect(out.match(/first answer/g)).toHaveLength(1);
    });

    edge("warns about a large read (the hook sees all of it)", async () => {
      const big = "x".repeat(150_000);
      const run = await runChapter(chapter, {
        files: { "big.txt": big },
        prompts: ["read"],
        steps: [
          { reply: reply(toolUse("read_file", { path: "big.txt" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      const warning = "Large output from read_file: 150000 chars";
      if (showsPasses)
        expect(run.output).toContain(`[hook] PostToolUse(largeOutputHook): ${warning}`);
      else
        expect(sessionLog(run.workdir).api).toContain(
          `"hook":"largeOutputHook","outcome":"note","text":"${warning}"`,
        );
      const sent = lastToolResults(run.requests[1]!)[0]?.content;
      // Until s08 the model gets the whole text; from s08 on, a file path and a preview.
      if (wholeResults) expect(sent).toBe(big);
      else expect(String(sent)).toMatch(/^<persisted-output>\nFull output: /);
    });

    edge("lists loaded command hooks at start and reports bad ones with their file", async () => {
      const run = await runChapter(chapter, {
        files: {
          ".claude/settings.json": JSON.stringify({
            hooks: { Notification: [{ hooks: [{ type: "command", command: "n.sh" }] }] },
          }),
          ".claude/settings.local.json": "{broken",
        },
        prompts: [],
      });
      expect(run.output).toContain("hooks.Notification is not an event this chapter has; skipped");
      expect(run.output).toContain(".claude/settings.local.json: invalid JSON");
    });
  });
});

// A hook's timeout is a second of waiting; the chapters wait side by side. An edge case:
// it runs where the hook modules differ and on the newest chapter.
describe.concurrent("hook timeouts", () => {
  it.for(chaptersFrom("s04").filter((chapter) => runsEdgeCases(chapter, HOOKS)))(
    "$id kills a hook that times out (with its children), says so, and runs the call",
    async (chapter, { expect }) => {
      const run = await runChapter(chapter, {
        files: settingsWith({
          PreToolUse: [["Bash", 'sleep 30 & echo $! > "$CLAUDE_PROJECT_DIR/hook.pid"; wait', 1]],
        }),
        prompts: ["go"],
        steps: [
          { reply: reply(toolUse("bash", { command: "echo still ran" })) },
          { when: afterTools, reply: reply(text("ok")) },
        ],
      });
      expect(run.output).toContain(
        '[hook] sleep 30 & echo $! > "$CLAUDE_PROJECT_DIR/hook.pid"; wait timed out after 1s',
      );
      expect(lastToolResults(run.requests[1]!)[0]?.content).toBe("still ran");
      const pid = Number(readFileSync(path.join(run.workdir, "hook.pid"), "utf8"));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(isAlive(pid)).toBe(false);
    },
  );
});
