/**
 * Custom commands, against every chapter from s07: files in `.claude/commands/` and
 * `~/.claude/commands/` in Claude Code's shape, skills as commands, `$ARGUMENTS` and `$1`,
 * `!` lines run through the permission pipeline before the prompt is sent, `allowed-tools`
 * for that turn only, `/help`, and every malformed file reported with its path.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { apiError, reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as CommandsModule from "../chapters/s07-skills/src/commands.ts";
import { carried, chaptersFrom, importChapter, moduleVersions } from "./chapters.ts";
import {
  afterTools,
  everyAttempt,
  lastMentions,
  lastToolResults,
  runChapter,
  tempWorkspace,
  writeFiles,
} from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;

const COMMANDS = moduleVersions("s07", ["commands.ts", "skills.ts", "repl.ts"]);

/** A command as Claude Code's documentation writes one. */
const TIDY = [
  "---",
  "description: Tidy the workspace",
  "argument-hint: [file]",
  "allowed-tools: Bash(rm:*)",
  "---",
  "Current notes: !`cat $1`",
  "Remove old.txt, then report on $ARGUMENTS.",
  "",
].join("\n");

/** The text the last user message carries (its first text block, or the string). */
function sent(request: Request): string {
  const last = request.messages.at(-1)!;
  if (typeof last.content === "string") return last.content;
  const first = last.content.find((block) => block.type === "text");
  return first?.type === "text" ? first.text : "";
}

describe.concurrent.each(carried(chaptersFrom("s07"), COMMANDS))("$id commands", (chapter) => {
  it("/tidy runs its ! line, fills in its arguments, and allows its allowed-tools for that turn only", async () => {
    const run = await runChapter(chapter, {
      prompts: ["/tidy notes.txt", "now remove other.txt"],
      files: {
        ".claude/commands/tidy.md": TIDY,
        "notes.txt": "alpha\n",
        "old.txt": "old",
        "other.txt": "other",
      },
      steps: [
        {
          when: lastMentions("Remove old.txt"),
          reply: reply(toolUse("bash", { command: "rm old.txt" })),
        },
        { when: afterTools, reply: reply(text("removed")) },
        {
          when: lastMentions("now remove"),
          reply: reply(toolUse("bash", { command: "rm other.txt" })),
        },
        { when: afterTools, reply: reply(text("could not")) },
      ],
    });
    expect(sent(run.requests[0]!)).toBe(
      "Current notes: alpha\nRemove old.txt, then report on notes.txt.",
    );
    expect(existsSync(path.join(run.workdir, "old.txt"))).toBe(false);
    expect(run.output).toContain("[allowed] by allowed-tools Bash(rm:*) of /tidy");
    // The next turn is an ordinary one: rm asks again, and without a terminal is denied.
    expect(existsSync(path.join(run.workdir, "other.txt"))).toBe(true);
    expect(lastToolResults(run.requests[3]!)[0]?.content).toMatch(
      /^Permission denied: approval needed \(Potentially destructive command: rm\)/,
    );
    expect(run.output).toContain("[commands] 1 command(s): /tidy (/help lists every command)");
  });

  it("keeps allowed-tools to the command's turn even when that turn fails", async () => {
    const run = await runChapter(chapter, {
      prompts: ["/tidy notes.txt", "now remove other.txt"],
      files: { ".claude/commands/tidy.md": TIDY, "notes.txt": "alpha\n", "other.txt": "x" },
      steps: [
        ...everyAttempt(chapter, apiError(500, "api_error", "down")).map((fault) => ({
          when: lastMentions("Remove old.txt"),
          reply: fault,
        })),
        {
          when: lastMentions("now remove"),
          reply: reply(toolUse("bash", { command: "rm other.txt" })),
        },
        { when: afterTools, reply: reply(text("could not")) },
      ],
    });
    expect(run.output).toContain("down");
    expect(existsSync(path.join(run.workdir, "other.txt"))).toBe(true);
    expect(run.output).not.toContain("[allowed] by allowed-tools");
  });

  it("sends nothing when a ! line is refused by a gate or fails, and says which line and why", async () => {
    const run = await runChapter(chapter, {
      prompts: ["/root", "/broken", "hello"],
      files: {
        ".claude/commands/root.md": "Who am I: !`sudo whoami`\n",
        ".claude/commands/broken.md": "Log: !`cat missing.txt`\n",
      },
      steps: [{ when: lastMentions("hello"), reply: reply(text("hi")) }],
    });
    expect(run.requests).toHaveLength(1);
    expect(run.output).toContain(
      "[commands] /root (.claude/commands/root.md): !`sudo whoami` did not run: Permission denied by the deny list: 'sudo' is never allowed.",
    );
    expect(run.output).toMatch(
      /\[commands\] \/broken \(\.claude\/commands\/broken\.md\): !`cat missing\.txt` failed: Error: command exited with status 1\n.*No such file/,
    );
    expect(run.output).toContain("[commands] /broken was not sent");
  });

  it("runs a block fenced by ```! as one script, with its arguments, and sends its output in the block's place", async () => {
    const fenced = [
      "---",
      "description: Set up from a fenced block",
      "---",
      "Setup:",
      "```!",
      "printf 'first %s\\n' $1",
      "printf 'second %s\\n' $2",
      "```",
      "Then `cat` stays text, and so does ```sh fenced code```.",
      "",
    ].join("\n");
    const run = await runChapter(chapter, {
      prompts: ["/setup one two"],
      files: { ".claude/commands/setup.md": fenced },
      steps: [{ when: lastMentions("Setup:"), reply: reply(text("set")) }],
    });
    expect(sent(run.requests[0]!)).toBe(
      "Setup:\nfirst one\nsecond two\nThen `cat` stays text, and so does ```sh fenced code```.",
    );
    // One call ran both lines.
    expect(run.output.match(/> bash\(/g)).toHaveLength(1);
    expect(run.output).toContain("  first one\n  second two\n");
  });

  it("makes every skill a command: /name sends its SKILL.md with its folder; a user-only skill is not in the catalog", async () => {
    const run = await runChapter(chapter, {
      prompts: ["/release 1.2.0", "/help"],
      files: {
        "skills/release/SKILL.md":
          "---\nname: release\ndescription: Cut a release.\ndisable-model-invocation: true\n---\nTag the version.\n",
        "skills/review/SKILL.md": "---\nname: review\ndescription: Review code.\n---\nRead it.\n",
      },
      steps: [{ when: lastMentions("Tag the version"), reply: reply(text("tagged")) }],
    });
    const first = run.requests[0]!;
    expect(sent(first)).toBe(
      `Base directory for this skill: ${path.join(run.workdir, "skills", "release")}\n\nTag the version.\n\nARGUMENTS: 1.2.0`,
    );
    expect(first.system).toContain("- review: Review code.");
    expect(first.system).not.toContain("- release:");
    expect(run.output).toContain("  /release: Cut a release.");
    expect(run.output).toContain("  /review: Review code.");
  });

  it("/help lists every command with its arguments; bad files and clashes are reported with their paths", async () => {
    const home = tempWorkspace("home");
    writeFiles(home, {
      ".claude/commands/tidy.md": "---\ndescription: the user's tidy\n---\nTidy.\n",
      ".claude/commands/mine.md": "My own command.\n",
    });
    const run = await runChapter(chapter, {
      prompts: ["/help"],
      env: { HOME: home },
      files: {
        ".claude/commands/tidy.md": TIDY,
        ".claude/commands/git/push.md": "---\nallowed-tools: Bash(git push:*), Bash(\n---\nPush.\n",
        ".claude/commands/skills.md": "Shadowed by the harness's own /skills.\n",
        ".claude/commands/bad.md": "---\ndescription: [unclosed\n---\nBad.\n",
      },
    });
    expect(run.output).toContain("  /tidy [file]: Tidy the workspace");
    expect(run.output).toContain("  /mine: My own command.");
    expect(run.output).toContain("  /push: Push.");
    expect(run.output).toMatch(/ {2}\/skills: list the skills/);
    expect(run.output).toMatch(
      /\[commands\] \.claude\/commands\/bad\.md: frontmatter is not valid YAML \(line 2, .*\); skipped/,
    );
    expect(run.output).toContain(
      '[commands] .claude/commands/git/push.md: allowed-tools entry "Bash(" is not a rule like Bash(git add:*) or Read; skipped',
    );
    expect(run.output).toContain(
      "[commands] ~/.claude/commands/tidy.md: /tidy is also .claude/commands/tidy.md, which wins; skipped",
    );
    expect(run.output).toContain(
      "[commands] .claude/commands/skills.md: /skills is a command of this harness; the file is not used",
    );
    expect(run.requests).toHaveLength(0);
  });
});

describe.each(moduleVersions("s07", ["commands.ts"]))("$id commands.ts", (chapter) => {
  let commands: typeof CommandsModule;
  beforeAll(async () => {
    commands = await importChapter<typeof CommandsModule>(chapter, "commands.ts");
  });

  it.each([
    ["Fix issue #$ARGUMENTS now", "123 high", "Fix issue #123 high now"],
    ["Review PR #$1 at $2 for $3.", "456 high", "Review PR #456 at high for ."],
    ["Say hi.", "", "Say hi."],
    ["Say hi.", "loudly", "Say hi.\n\nARGUMENTS: loudly"],
    ["$10 and $1", "a b c d e f g h i j", "j and a"],
  ])("substitutes %j with %j", (body, args, expected) => {
    expect(commands.substitute(body, args)).toBe(expected);
  });

  it("reads the description from the body's first line when the frontmatter has none", () => {
    const problems: string[] = [];
    const command = commands.readCommand("x", "# Tidy up\nMore.\n", "x.md", problems);
    expect(command?.description).toBe("Tidy up");
    expect(problems).toEqual([]);
    // Claude Code's commands write their hint in brackets, which YAML alone would refuse.
    const hinted = "---\nargument-hint: [pr-number] [priority]\n---\nReview $1.\n";
    expect(commands.readCommand("r", hinted, "r.md", problems)?.hint).toBe(
      "[pr-number] [priority]",
    );
    commands.readCommand("y", "---\ndescription: 3\n---\nBody\n", "y.md", problems);
    expect(problems).toEqual(["y.md: description is a number, not a string; ignored"]);
  });
});
