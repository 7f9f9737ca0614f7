/**
 * Custom commands: Claude Code's slash commands. A Markdown file in `.claude/commands/`
 * (the project's) or `~/.claude/commands/` (the user's; the project's wins a name both
 * have) is the prompt that `/name args` sends; every skill is a command too
 * (`/skill-name` sends its SKILL.md).
 *
 *   ---
 *   description: Commit the staged work      /help shows it (absent: the body's first line)
 *   argument-hint: [message]                 /help shows it
 *   allowed-tools: Bash(git add:*), Bash(git commit:*)
 *   ---                                      calls these rules allow run without asking,
 *                                            for that command's turn only
 *   Changes: !`git status --short`           run before the prompt is sent, through the
 *                                            same pipeline as the model's calls
 *   Commit them. Message: $ARGUMENTS         $ARGUMENTS, $1, $2 … are the arguments
 *
 * A fenced block opened with ```! runs the same way, its lines as one script. A `!` command
 * that a gate refuses or that fails stops the command: nothing is sent, and the terminal
 * says which line and why. Files are read once at start.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { checkInput, type ToolOutput } from "shared";
import {
  composeSeams,
  type Mechanism,
  type RunContext,
  type SlashCommand,
  type ToolCall,
} from "./contract.ts";
import { kindOf, parseFrontmatter } from "./frontmatter.ts";
import type { AgentSetup, Harness } from "./harness.ts";
import { parseRules, type Rule, ruleMatches } from "./permission-rules.ts";
import { loadSkills } from "./skills.ts";

/** Where command files live, under the workspace and under the home folder. */
export const COMMANDS_DIR = ".claude/commands";
/** `!` and a command in backticks, or a block fenced by ```! and ```: Claude Code's two forms. */
const BANG = /^```!\n([\s\S]*?)\n```$|!`([^`\n]+)`/gm;

export interface CommandFile {
  name: string;
  description: string;
  /** `argument-hint`, for /help. */
  hint?: string;
  /** The `allowed-tools` rules: calls they allow run without asking during its turn. */
  allowed: Rule[];
  /** Its `model` line, which this harness does not follow (the session's model answers). */
  model?: string;
  /** The prompt, before `$ARGUMENTS` and `!` lines are filled in. */
  body: string;
  /** Where it came from, as messages show it. */
  file: string;
}

export interface LoadedCommands {
  commands: CommandFile[];
  /** One line per file or field that could not be used, with its path. */
  problems: string[];
}

/** Reads `<workdir>/.claude/commands/**\/*.md`, then `<home>/.claude/commands/**\/*.md`. */
export function loadCommands(workdir: string, home: string | undefined): LoadedCommands {
  const commands: CommandFile[] = [];
  const problems: string[] = [];
  const roots = [{ dir: path.join(workdir, COMMANDS_DIR), shown: COMMANDS_DIR }];
  if (home) roots.push({ dir: path.join(home, COMMANDS_DIR), shown: `~/${COMMANDS_DIR}` });
  for (const root of roots) {
    for (const relative of markdownFiles(root.dir)) {
      const file = `${root.shown}/${relative}`;
      const name = path.basename(relative, ".md");
      if (!/^[A-Za-z][\w-]*$/.test(name)) {
        problems.push(`${file}: /${name} cannot be typed as a command name; skipped`);
        continue;
      }
      const kept = commands.find((command) => command.name === name);
      if (kept) {
        problems.push(`${file}: /${name} is also ${kept.file}, which wins; skipped`);
        continue;
      }
      const text = readFileSync(path.join(root.dir, relative), "utf8");
      const command = readCommand(name, text, file, problems);
      if (command) commands.push(command);
    }
  }
  return { commands, problems };
}

/** Markdown files under `dir`, subfolders included, in name order (none: no folder). */
function markdownFiles(dir: string, prefix = ""): string[] {
  let names: string[];
  try {
    names = readdirSync(path.join(dir, prefix)).sort();
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (name.startsWith(".")) return [];
    const relative = path.join(prefix, name);
    if (statSync(path.join(dir, relative), { throwIfNoEntry: false })?.isDirectory()) {
      return markdownFiles(dir, relative);
    }
    return name.endsWith(".md") ? [relative] : [];
  });
}

/** One command from its text, or null after reporting why it cannot be used. */
export function readCommand(
  name: string,
  text: string,
  file: string,
  problems: string[],
): CommandFile | null {
  const { meta, body, problem } = parseFrontmatter(quoteHint(text));
  if (!meta) {
    problems.push(`${file}: ${problem}; skipped`);
    return null;
  }
  const field = (key: string): string | undefined => {
    const value = meta[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string") return value.trim() || undefined;
    problems.push(`${file}: ${key} is ${kindOf(value)}, not a string; ignored`);
    return undefined;
  };
  const description = field("description") ?? body.split("\n")[0]?.replace(/^#+\s*/, "") ?? "";
  return {
    name,
    description: description.trim() || "(no description)",
    hint: field("argument-hint"),
    allowed: allowedRules(meta["allowed-tools"], file, problems),
    model: field("model"),
    body,
    file,
  };
}

/**
 * Claude Code's own commands write `argument-hint: [pr-number] [priority]`, which YAML would
 * read as a list (or refuse): the hint is text, so that one line is quoted before parsing.
 */
function quoteHint(text: string): string {
  return text.replace(
    /^(argument-hint:[ \t]*)(\[.*?)[ \t]*$/m,
    (_line, key: string, value: string) => `${key}${JSON.stringify(value)}`,
  );
}

/** `allowed-tools` as rules: a comma list or a YAML list; a bad entry is reported, skipped. */
function allowedRules(value: unknown, file: string, problems: string[]): Rule[] {
  if (value === undefined || value === null) return [];
  // Commas inside a rule's parentheses belong to the rule.
  const entries = typeof value === "string" ? value.split(/,(?![^(]*\))/) : value;
  if (!Array.isArray(entries)) {
    problems.push(`${file}: allowed-tools is ${kindOf(value)}; write rules like Bash(git add:*)`);
    return [];
  }
  return entries.flatMap((entry) => {
    const text = typeof entry === "string" ? entry.trim() : entry;
    if (text === "") return [];
    const settings = { label: `allowed-tools of ${file}`, path: file, hooks: undefined };
    const { rules } = parseRules([{ ...settings, permissions: { allow: [text] } }]);
    if (rules.length === 0) {
      problems.push(
        `${file}: allowed-tools entry ${JSON.stringify(text)} is not a rule like Bash(git add:*) or Read; skipped`,
      );
    }
    return rules;
  });
}

/**
 * The prompt with its arguments: `$ARGUMENTS` is all of them, `$1`, `$2` … one each (""
 * when missing). A prompt that uses none gets them after it, as Claude Code does.
 */
export function substitute(body: string, args: string): string {
  const all = args.trim();
  const positional = all ? all.split(/\s+/) : [];
  let used = false;
  const text = body.replace(/\$ARGUMENTS|\$(\d+)/g, (_match, n: string | undefined) => {
    used = true;
    return n === undefined ? all : (positional[Number(n) - 1] ?? "");
  });
  return used || !all ? text : `${text}\n\nARGUMENTS: ${all}`;
}

/**
 * Runs one `!` command as the main agent's calls run: the tool Claude Code calls `Bash`,
 * its input checked, every review and gate of the agent's seams, then the tool and what
 * follows it. Its output, or why it did not run.
 */
async function runBang(
  command: string,
  id: string,
  setup: AgentSetup,
  run: RunContext,
  harness: Pick<Harness, "emit">,
): Promise<{ ok: boolean; ran: boolean; text: string }> {
  const tool = [...setup.tools.values()].find((t) => t.claudeCode?.name === "Bash");
  if (!tool) return { ok: false, ran: false, text: "no tool here runs shell commands" };
  let ran = false;
  const seams = composeSeams(setup.seams);
  const call: ToolCall = { id, name: tool.name, input: { command } };
  harness.emit({ type: "tool_call", scope: run.scope, ...call });
  const started = performance.now();
  const output = await (async (): Promise<ToolOutput> => {
    const parsed = checkInput(tool, call.input);
    if (!parsed.ok) return { content: parsed.error, isError: true };
    const review = await seams.reviewToolCall({ ...call, input: parsed.value }, run);
    if ("refuse" in review) return review.refuse;
    const again = checkInput(tool, review.call.input);
    if (!again.ok) return { content: again.error, isError: true };
    const checked = { ...review.call, input: again.value };
    const refusal = await seams.beforeToolCall(checked, run);
    if (refusal) return refusal;
    ran = true;
    return seams.afterToolCall(checked, await tool.run(again.value, run), run);
  })();
  harness.emit({
    type: "tool_result",
    scope: run.scope,
    id,
    name: tool.name,
    content: output.content,
    isError: output.isError === true,
    durationMs: performance.now() - started,
    ...(output.quiet ? { quiet: true } : {}),
  });
  return { ok: output.isError !== true, ran, text: output.content };
}

/** The commands of a skill list: `/name` sends the skill, its folder named first. */
function skillCommands(workdir: string, problems: string[]): CommandFile[] {
  return loadSkills(workdir).skills.flatMap((skill) => {
    if (!/^[A-Za-z][\w-]*$/.test(skill.name)) return [];
    const file = path.relative(workdir, skill.path);
    const command = readCommand(skill.name, skill.text, file, problems);
    if (!command) return [];
    const body = `Base directory for this skill: ${path.dirname(skill.path)}\n\n${command.body}`;
    return [{ ...command, description: skill.description, body }];
  });
}

interface Active {
  request: string;
  command: CommandFile;
}

/**
 * Custom commands as a mechanism: the files and the skills as slash commands; a review
 * seam that lets the running command's `allowed-tools` calls through without a question
 * (a verdict the gates honour, as a hook's "allow" is); the count in the banner.
 */
export function commandsMechanism(
  harness: Pick<Harness, "workdir" | "env" | "emit" | "printer" | "agent">,
): Mechanism {
  const problems: string[] = [];
  const files = loadCommands(harness.workdir, harness.env.HOME);
  problems.push(...files.problems);
  const taken = new Set(files.commands.map((command) => command.name));
  const skills = skillCommands(harness.workdir, problems).filter((c) => !taken.has(c.name));
  const all = [...files.commands, ...skills];
  // The command whose turn is about to start, then the one whose turn is under way.
  let pending: Active | null = null;
  let active: Active | null = null;
  const say = (text: string, tone: "warn" | "dim") =>
    harness.emit({ type: "notice", scope: "main", text, tone });

  const slash = (command: CommandFile): SlashCommand => ({
    description: command.description,
    hint: command.hint,
    file: command.file,
    async run(args, context) {
      const setup = harness.agent("main", "main");
      let text = substitute(command.body, args);
      const run: RunContext = {
        workdir: harness.workdir,
        signal: context.signal,
        scope: "main",
        role: "main",
        turn: "user",
        request: text,
        system: setup.system,
        tools: setup.tools,
      };
      // Its allowed-tools hold for its own `!` lines too.
      active = { request: text, command };
      try {
        let n = 0;
        for (const match of [...text.matchAll(BANG)]) {
          const line = (match[1] ?? match[2]!).trim();
          const result = await runBang(line, `command_${++n}`, setup, run, harness);
          if (!result.ok) {
            const what = result.ran ? "failed" : "did not run";
            say(
              `[commands] /${command.name} (${command.file}): !\`${line}\` ${what}: ${result.text}`,
              "warn",
            );
            say(`[commands] /${command.name} was not sent`, "warn");
            return undefined;
          }
          text = text.replace(match[0], () => result.text.trimEnd());
        }
      } finally {
        active = null;
      }
      if (command.model) {
        say(
          `[commands] /${command.name}: model ${command.model} is not used here; the session's model answers`,
          "dim",
        );
      }
      pending = { request: text, command };
      return { kind: "user", request: text, content: text };
    },
  });

  return {
    name: "commands",
    commands: Object.fromEntries(all.map((command) => [command.name, slash(command)])),
    loop: () => ({
      reviewToolCall: async (call, run) => {
        const rules = active?.command.allowed ?? [];
        const options = { workdir: run.workdir, rules, tools: run.tools };
        const rule = rules.find((r) => ruleMatches(r, call, options));
        // A verdict already given (a hook's "ask", say) stands; other agents are not its turn.
        if (!rule || call.verdict || !active || run.scope !== "main") return { call };
        const by = `allowed-tools ${rule.text} of /${active.command.name}`;
        return { call: { ...call, verdict: { decision: "allow", by } } };
      },
    }),
    turn: {
      // The command's own turn, and no other, runs with its allowed-tools.
      beforeTurn: async (turn) => {
        active = pending && turn.request === pending.request ? pending : null;
        pending = null;
      },
      afterTurn: async () => {
        active = null;
      },
    },
    start: () => [
      ...problems.map((problem) => ({ text: `[commands] ${problem}`, tone: "warn" as const })),
      ...(files.commands.length > 0
        ? [
            {
              text: `[commands] ${files.commands.length} command(s): ${files.commands.map((c) => `/${c.name}`).join(", ")} (/help lists every command)`,
              tone: "dim" as const,
            },
          ]
        : []),
    ],
  };
}
