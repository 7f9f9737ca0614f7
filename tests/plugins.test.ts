/**
 * Plugins, against every chapter from s14: a plugin folder written for these tests
 * (tests/fixtures/plugins/loop-kit: a command with a fenced `!` block and one with a `!`
 * line, an agent, a skill, a Stop hook that brings the task back until a promise or a round
 * limit, an MCP server) loaded with --plugin-dir, each part working as a project's own
 * would; plugins a project enables through a folder market, asked about on a terminal and
 * skipped without one; name clashes; and every malformed manifest reported with its file.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import type Anthropic from "@anthropic-ai/sdk";
import { reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as PluginsModule from "../chapters/s14-mcp/src/plugins.ts";
import { carried, chaptersFrom, importChapter, moduleVersions } from "./chapters.ts";
import {
  afterTools,
  type Capture,
  lastMentions,
  lastToolResults,
  runChapter,
  tempWorkspace,
  toolNames,
  writeFiles,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;

const KIT = new URL("./fixtures/plugins/loop-kit", import.meta.url).pathname;
const PLUGINS = moduleVersions("s14", [
  "plugins.ts",
  "harness.ts",
  "repl.ts",
  "commands.ts",
  "hooks.ts",
  "agents.ts",
  "skills.ts",
  "mcp-config.ts",
]);

/** The text of a request's last user message (its text blocks, or the string). */
function lastText(request: Request): string {
  const last = request.messages.at(-1)!;
  if (typeof last.content === "string") return last.content;
  return last.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
}

const systemText = (request: Request) =>
  typeof request.system === "string"
    ? request.system
    : (request.system ?? []).map((block) => block.text).join("\n");

describe.concurrent.each(carried(chaptersFrom("s14"), PLUGINS))("$id plugins", (chapter) => {
  it("/loop runs the kit's fenced block, and its Stop hook brings the task back until the promise", async () => {
    const run = await runChapter(chapter, {
      argv: ["--plugin-dir", KIT],
      prompts: ["/loop 5 SHIPPED write NOTES.md"],
      steps: [
        { when: lastMentions("Loop started"), reply: reply(text("First draft.")) },
        { when: lastMentions("write NOTES.md"), reply: reply(text("Second draft.")) },
        { when: lastMentions("write NOTES.md"), reply: reply(text("<promise>SHIPPED</promise>")) },
      ],
    });
    // The block ran with the plugin's folder filled in, and its output replaced it.
    expect(run.output).toContain(
      `> bash({"command":"\\"${KIT}/scripts/start-loop.mjs\\" 5 SHIPPED`,
    );
    expect(lastText(run.requests[0]!)).toMatch(
      /^Loop started: round 1 of 5; the promise is "SHIPPED"\.\nTask: write NOTES\.md\n\nWork on the task above\./,
    );
    expect(run.requests).toHaveLength(3);
    expect(run.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "write NOTES.md" });
    expect(run.output).toContain("[hook] loop-kit: round 3 of 5");
    expect(run.output).toContain("[hook] loop-kit: promise kept in round 3");
    expect(existsSync(path.join(run.workdir, ".claude/loop-kit.json"))).toBe(false);
    expect(run.model.unmatched).toHaveLength(0);
  });

  it("stops the loop at its round limit, and /loop-kit:status runs its ! line", async () => {
    const run = await runChapter(chapter, {
      argv: [`--plugin-dir=${KIT}`],
      prompts: ["/loop-kit:loop 2 DONE tidy up", "/loop-kit:status"],
      steps: [
        { when: lastMentions("tidy up"), reply: reply(text("Tidied a bit.")) },
        { when: lastMentions("tidy up"), reply: reply(text("Tidied more.")) },
        { when: lastMentions("Loop state: none"), reply: reply(text("No loop.")) },
      ],
    });
    expect(run.requests).toHaveLength(3);
    expect(run.output).toContain("[hook] loop-kit: 2 round(s) done");
    expect(lastText(run.requests[2]!)).toContain("Loop state: none");
    expect(run.model.unmatched).toHaveLength(0);
  });

  it("gives the kit's agent, skill and server to the model, each as the project's own", async () => {
    const run = await runChapter(chapter, {
      argv: ["--plugin-dir", KIT],
      prompts: ["review it", "/plugin"],
      files: {
        ".claude/settings.json": JSON.stringify({
          permissions: { allow: ["mcp__plugin_loop-kit_notes"] },
        }),
      },
      steps: [
        {
          when: lastMentions("review it"),
          reply: reply(toolUse("task", { prompt: "Review NOTES.md", subagent_type: "reviewer" })),
        },
        { when: (r) => systemText(r).includes("You review changes."), reply: reply(text("ok")) },
        {
          when: afterTools,
          reply: reply(toolUse("load_skill", { name: "loop-kit:checklist" })),
        },
        {
          when: afterTools,
          reply: reply(toolUse("connect_mcp", { name: "plugin:loop-kit:notes" })),
        },
        {
          when: afterTools,
          reply: reply(toolUse("mcp__plugin_loop-kit_notes__note", { text: "three short words" })),
        },
        { when: afterTools, reply: reply(text("reviewed")) },
      ],
    });
    expect(run.model.unmatched).toHaveLength(0);
    const main = run.requests.filter((r) => toolNames(r).includes("task"));
    // The agent, by its plain name; its body has the plugin's folder.
    const task = (main[0]!.tools as Anthropic.Tool[]).find((t) => t.name === "task")!;
    expect(task.description).toContain(
      "- loop-kit:reviewer: Reviews a change against the checklist",
    );
    const child = run.requests.find((r) => systemText(r).includes("You review changes."))!;
    expect(systemText(child)).toContain(`${KIT}/skills/checklist/SKILL.md`);
    expect(systemText(main[0]!)).toContain("- loop-kit:checklist: The checks a change passes");
    expect(lastToolResults(main[2]!)[0]!.content).toContain(`${KIT}/scripts/start-loop.mjs`);
    expect(lastToolResults(main[4]!)[0]!.content).toBe(`note of 3 word(s), from ${KIT}`);
    // /plugin lists the kit and its parts.
    expect(run.output).toContain(`loop-kit 1.0.0 (--plugin-dir, ${KIT})`);
    expect(run.output).toContain("  commands: /loop-kit:loop, /loop-kit:status");
    expect(run.output).toContain("  agents: loop-kit:reviewer");
    expect(run.output).toContain("  skills: loop-kit:checklist");
    expect(run.output).toContain(
      `  hook Stop: node "\${CLAUDE_PLUGIN_ROOT}/scripts/stop-loop.mjs"`,
    );
    expect(run.output).toContain(
      "[plugins] 1 plugin(s): loop-kit (--plugin-dir) (/plugin lists their parts)",
    );
  });

  it("keeps the project's own names: a clash is reported, the plain name is the project's", async () => {
    const run = await runChapter(chapter, {
      argv: ["--plugin-dir", KIT],
      prompts: ["/loop now", "/help"],
      files: {
        ".claude/commands/loop.md":
          "---\ndescription: The project's loop\n---\nProject loop: $ARGUMENTS\n",
      },
      steps: [{ when: lastMentions("Project loop: now"), reply: reply(text("mine")) }],
    });
    expect(run.model.unmatched).toHaveLength(0);
    expect(run.output).toContain(
      "[commands] loop-kit (commands/loop.md): the project's /loop keeps that name; this one is /loop-kit:loop",
    );
    expect(run.output).toContain(
      "  /loop-kit:loop ROUNDS PROMISE TASK...: Work on a task until you say the promise, or for a number of rounds",
    );
  });
});

describe.each(carried(chaptersFrom("s14"), PLUGINS))(
  "$id plugin hooks it cannot run",
  (chapter) => {
    it("reports a plugin's hooks for events and fields this harness lacks, and skips only those", async () => {
      const root = path.join(tempWorkspace("hooks-kit"), "guard");
      writeFiles(root, {
        "hooks/hooks.json": JSON.stringify({
          hooks: {
            SessionStart: [{ hooks: [{ type: "command", command: "echo start" }] }],
            PostToolUse: [
              {
                matcher: "Bash",
                hooks: [{ type: "command", command: "echo x", if: "Bash(git commit:*)" }],
              },
              { matcher: "Bash", hooks: [{ type: "command", command: "echo after" }] },
            ],
          },
        }),
      });
      const run = await runChapter(chapter, { argv: ["--plugin-dir", root], prompts: [] });
      expect(run.output).toContain(
        "[plugins] guard (hooks/hooks.json): hooks.SessionStart is not an event this chapter has; skipped",
      );
      expect(run.output).toContain(
        '[plugins] guard (hooks/hooks.json): hooks.PostToolUse[0].hooks[0]: "if" is not supported here; skipped',
      );
      expect(run.output).toContain(
        "[hook] PostToolUse (matcher Bash): echo after from guard (hooks/hooks.json)",
      );
    });
  },
);

describe.each(carried(chaptersFrom("s14"), PLUGINS))("$id plugins a project enables", (chapter) => {
  /** A market folder holding the kit, and settings that enable it from there. */
  function enabledKit(workdir: string) {
    writeFiles(workdir, {
      "market/.claude-plugin/marketplace.json": JSON.stringify({
        name: "course",
        plugins: [{ name: "loop-kit", source: "./loop-kit" }],
      }),
      ".claude/settings.json": JSON.stringify({
        extraKnownMarketplaces: { course: { source: { source: "directory", path: "./market" } } },
        enabledPlugins: { "loop-kit@course": true },
      }),
    });
    cpSync(KIT, path.join(workdir, "market/loop-kit"), { recursive: true });
  }

  it("skips a plugin the project enables when there is no terminal to ask on, and says why", async () => {
    const workdir = tempWorkspace("enabled");
    enabledKit(workdir);
    const run = await runChapter(chapter, { workdir, prompts: ["/plugin"] });
    expect(run.output).toContain(
      "[plugins] loop-kit@course (enabled by .claude/settings.json) not loaded: a plugin the project enables is asked about before its first load, and there is no terminal to ask on",
    );
    expect(run.output).toContain("No plugins loaded.");
  });

  it("asks on a terminal before the first load, lists what it runs, and remembers a yes", async () => {
    const workdir = tempWorkspace("trust");
    enabledKit(workdir);
    const session = async (answer: string | null) => {
      const stdin = Object.assign(new PassThrough(), { isTTY: true });
      let stdout: Capture | undefined;
      const pending = runChapter(chapter, {
        workdir,
        stdin,
        onOutput: (capture) => {
          stdout = capture;
        },
      });
      // Resolves once `text` has been printed (before this call or after it).
      const seen = async (text: string) => {
        while (!stdout) await new Promise((resolve) => setTimeout(resolve, 5));
        if (!stdout.text.includes(text)) await stdout.waitFor(text);
      };
      if (answer !== null) {
        await seen("Load loop-kit? [y/N]");
        stdin.write(`${answer}\n`);
      }
      await seen("Type a request");
      stdin.end();
      return pending;
    };
    const declined = await session("n");
    expect(declined.output).toContain(
      `The project enables plugin loop-kit@course (.claude/settings.json), from ${workdir}/market/loop-kit:`,
    );
    expect(declined.output).toContain(
      `  hook Stop: node "\${CLAUDE_PLUGIN_ROOT}/scripts/stop-loop.mjs"`,
    );
    expect(declined.output).toContain(
      `  MCP server notes: node \${CLAUDE_PLUGIN_ROOT}/scripts/notes-server.mjs`,
    );
    expect(declined.output).toContain("[plugins] loop-kit@course not loaded: you declined it");
    const accepted = await session("y");
    expect(accepted.output).toContain("[plugins] 1 plugin(s): loop-kit (.claude/settings.json)");
    // The answer is kept: the next session loads it without a question.
    const again = await session(null);
    expect(again.output).not.toContain("Load loop-kit?");
    expect(again.output).toContain("[plugins] 1 plugin(s): loop-kit (.claude/settings.json)");
    const trustFile = path.join(workdir, ".harness/plugins-trusted.json");
    expect(JSON.parse(readFileSync(trustFile, "utf8"))).toHaveProperty("loop-kit@course");
    // A corrupt answer file is reported and left as it is: the plugin is asked about again.
    writeFileSync(trustFile, "{ torn");
    const corrupt = await session("y");
    expect(corrupt.output).toContain(`[plugins] ${trustFile}: invalid JSON (`);
    expect(corrupt.output).toContain("left as it is, answers not kept");
    expect(corrupt.output).toContain("[plugins] 1 plugin(s): loop-kit (.claude/settings.json)");
    expect(readFileSync(trustFile, "utf8")).toBe("{ torn");
  });
});

describe.each(carried(chaptersFrom("s14"), PLUGINS))("$id plugin manifests", (chapter) => {
  let plugins: typeof PluginsModule;
  beforeAll(async () => {
    plugins = await importChapter<typeof PluginsModule>(chapter, "plugins.ts");
  });
  const read = (files: Record<string, string>) => {
    const root = path.join(tempWorkspace("manifest"), "kit");
    writeFiles(root, files);
    const problems: string[] = [];
    return { root, plugin: plugins.readPlugin(root, "--plugin-dir", problems), problems };
  };
  const manifest = (value: unknown) => ({
    ".claude-plugin/plugin.json": typeof value === "string" ? value : JSON.stringify(value),
  });

  it.each([
    ["not JSON", "{ name: kit", /plugin\.json: invalid JSON \(.*\); plugin skipped$/],
    ["not an object", "[1]", /plugin\.json: must be a JSON object; plugin skipped$/],
    ["without a name", { version: "1.0.0" }, /plugin\.json: has no name; plugin skipped$/],
    [
      "with a name that is not kebab-case",
      { name: "My Kit" },
      /plugin\.json: name "My Kit" is not kebab-case \(lowercase letters, digits, hyphens\); plugin skipped$/,
    ],
  ])("skips a manifest %s, naming the file", (_what, value, problem) => {
    const { root, plugin, problems } = read(manifest(value));
    expect(plugin).toBeNull();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(problem);
    expect(problems[0]!.startsWith(path.join(root, ".claude-plugin/plugin.json"))).toBe(true);
  });

  it("reports each bad field and path, and loads what is right", () => {
    const { root, plugin, problems } = read({
      ...manifest({
        name: "kit",
        version: "one",
        description: 7,
        author: "me",
        commands: ["./cmds", "../outside", "cmds", "./missing"],
        agents: 3,
        hooks: "./hooks.json",
        mcpServers: { notes: { command: "node", args: ["${CLAUDE_PLUGIN_ROOT}/s.mjs"] } },
      }),
      "cmds/go.md": "Go.\n",
      "commands/ignored.md": "Not read: the manifest names cmds instead.\n",
      "hooks.json": "{ not json",
    });
    const at = path.join(root, ".claude-plugin/plugin.json");
    expect(problems).toEqual([
      `${at}: version "one" is not a semantic version like 1.2.0; ignored`,
      `${at}: description must be a string; ignored`,
      `${at}: author must be an object with a "name"; ignored`,
      `${at}: commands[1] "../outside" must be a path that starts with ./; ignored`,
      `${at}: commands[2] "cmds" must be a path that starts with ./; ignored`,
      `${at}: commands[3] "./missing" does not exist; ignored`,
      `${at}: agents must be a path or a list of paths; ignored`,
      expect.stringMatching(/hooks\.json: invalid JSON \(.*\); its hooks skipped$/),
    ]);
    expect(plugin!.commands).toEqual([path.join(root, "cmds/go.md")]);
    expect(plugin!.hooks).toEqual([]);
    expect(plugins.whatItRuns(plugin!)).toEqual([
      "MCP server notes: node ${CLAUDE_PLUGIN_ROOT}/s.mjs",
    ]);
  });

  it("names a plugin without a manifest after its folder, and refuses a path that leads outside", () => {
    const { plugin, problems } = read({ "commands/a.md": "A.\n" });
    expect(problems).toEqual([]);
    expect(plugin).toMatchObject({
      name: "kit",
      commands: [expect.stringMatching(/commands\/a\.md$/)],
    });
    const outside = read(manifest({ name: "kit", skills: "./../../etc" }));
    expect(outside.problems).toEqual([
      `${outside.root}/.claude-plugin/plugin.json: skills "./../../etc" leads outside the plugin; ignored`,
    ]);
  });

  it("reports markets and enabled plugins it cannot use, each with its file", () => {
    const workdir = tempWorkspace("markets");
    writeFiles(workdir, {
      ".claude/settings.json": JSON.stringify({
        extraKnownMarketplaces: {
          remote: { source: { source: "github", repo: "anthropics/claude-code" } },
          local: { source: { source: "directory", path: "./market" } },
        },
        enabledPlugins: {
          "a@remote": true,
          nomarket: true,
          "b@local": true,
          "c@gone": true,
          "d@local": false,
        },
      }),
      "market/.claude-plugin/marketplace.json": JSON.stringify({ name: "local", plugins: [] }),
    });
    const problems: string[] = [];
    expect(plugins.enabledPlugins(workdir, problems)).toEqual([]);
    const settings = path.join(workdir, ".claude/settings.json");
    expect(problems).toEqual([
      `${settings}: extraKnownMarketplaces.remote.source is "github"; this harness reads a market from a folder only ({"source": "directory", "path": "…"}): clone it and name the folder`,
      ".claude/settings.json: a@remote: no market 'remote' in extraKnownMarketplaces; plugin skipped",
      '.claude/settings.json: enabledPlugins key "nomarket" is not name@market; ignored',
      `${workdir}/market/.claude-plugin/marketplace.json: lists no plugin 'b'; b@local skipped`,
      ".claude/settings.json: c@gone: no market 'gone' in extraKnownMarketplaces; plugin skipped",
    ]);
  });

  it("reads --plugin-dir in both spellings and reports anything else", () => {
    const problems: string[] = [];
    expect(
      plugins.pluginDirArgs(
        ["--", "--plugin-dir", "a", "--plugin-dir=/b", "--verbose", "--plugin-dir"],
        "/base",
        problems,
      ),
    ).toEqual(["/base/a", "/b"]);
    expect(problems).toEqual([
      'unknown argument "--verbose"; ignored (this harness takes --plugin-dir <path>)',
      "--plugin-dir needs a folder; ignored",
    ]);
  });
});
