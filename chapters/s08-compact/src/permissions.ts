/**
 * The permission pipeline (s03): three gates before every tool call.
 *
 *   Gate 1  the deny list (bash): never allowed, nobody is asked
 *   rules   `.claude/settings*.json` permissions: deny > ask > allow
 *   Gate 2  built-in rules that need a human: destructive commands, paths outside WORKDIR,
 *           writes to `.claude/` (the agent must not grant itself rules or hooks)
 *   Gate 3  the approval prompt; without a terminal the call is denied (fail closed)
 *
 * A denied call still gets a tool_result (is_error) that names the gate, so the model
 * learns why and can adapt. Commands are read at command position (`rm` as a command, not
 * inside `echo rm x`): a heuristic that catches honest mistakes, not a sandbox.
 */
import os from "node:os";
import path from "node:path";
import picomatch from "picomatch";
import type {
  EventSink,
  LineReader,
  SessionLog,
  Tone,
  ToolContext,
  ToolMap,
  ToolOutput,
} from "shared";
import type { ToolCall, ToolGate } from "./loop.ts";
import type { SettingsFile } from "./settings.ts";
import { isInside, realPathOf, resolveInWorkspace } from "./tools.ts";

/** Gate 1, one source of truth from s03 on (matched at command position). */
export const DENY_LIST = ["rm -rf /", "sudo", "shutdown", "reboot", "mkfs", "dd if=", "> /dev/sda"];
/** Gate 2: command words that delete. */
export const DESTRUCTIVE_COMMANDS = ["rm", "rmdir", "unlink", "del", "erase"];
/** The tools whose `path` Gate 2 checks against the workspace. */
export const PATH_TOOLS = new Set(["read_file", "write_file", "edit_file"]);
const WRITE_TOOLS = new Set(["write_file", "edit_file"]);

export type RuleKind = "allow" | "deny" | "ask";

export interface Rule {
  kind: RuleKind;
  /** As written: `Bash(npm test:*)`. */
  text: string;
  tool: string;
  specifier: string | null;
  /** The settings file it came from, e.g. `.claude/settings.json`. */
  file: string;
}

export type Decision =
  | { action: "run"; by?: Rule }
  | { action: "deny"; gate: "deny list" | "deny rule"; message: string; rule?: Rule }
  | { action: "ask"; reason: string };

export interface PermissionOptions {
  workdir: string;
  rules: Rule[];
  /** The chapter's tools: their Claude Code aliases let `Bash(...)`, `Read(...)` … match. */
  tools: ToolMap;
  reader: Pick<LineReader, "ask" | "isTTY">;
  emit: EventSink;
  log: SessionLog;
}

/** The pipeline as the loop's `beforeToolCall` seam: a refusal, or null to run the call. */
export function createPermissionGate(options: PermissionOptions): ToolGate {
  return async (call, context) => {
    const decision = decide(call, options);
    if (decision.action === "run") {
      if (decision.by) {
        const rule = `allow rule ${decision.by.text} in ${decision.by.file}`;
        notice(options, context, `[allowed] by ${rule}`, "dim");
        record(options, context, call, rule, "allow");
      }
      return null;
    }
    if (decision.action === "deny") {
      const tone = decision.gate === "deny list" ? "error" : "warn";
      const tag = decision.gate === "deny list" ? "[blocked]" : "[denied]";
      notice(options, context, `${tag} ${decision.message}`, tone);
      record(options, context, call, decision.gate, "deny");
      return { content: decision.message, isError: true, quiet: true };
    }
    return approve(call, decision.reason, options, context);
  };
}

/** Gate 3: show the whole call, then ask; only `y`/`yes` approve. */
async function approve(
  call: ToolCall,
  reason: string,
  options: PermissionOptions,
  context: ToolContext,
): Promise<ToolOutput | null> {
  notice(options, context, `[permission] ${reason}`, "warn");
  notice(options, context, `   Tool: ${call.name}(${JSON.stringify(call.input)})`, "warn");
  if (!options.reader.isTTY) {
    const message =
      `Permission denied: approval needed (${reason}) but stdin is not a terminal; ` +
      "an allow rule in .claude/settings.json can permit this call.";
    notice(options, context, `[denied] ${message}`, "warn");
    record(options, context, call, reason, "deny (no terminal)");
    return { content: message, isError: true, quiet: true };
  }
  const prefix = context.scope === "main" ? "" : `  [${context.scope}] `;
  const answer = await options.reader.ask(`${prefix}   Allow? [y/N] `);
  const yes = answer !== null && ["y", "yes"].includes(answer.trim().toLowerCase());
  record(options, context, call, reason, yes ? "allow" : "deny");
  if (yes) return null;
  const message = `Permission denied by the user at the approval prompt (${reason}).`;
  notice(options, context, `[denied] ${message}`, "warn");
  return { content: message, isError: true, quiet: true };
}

function notice(options: PermissionOptions, context: ToolContext, text: string, tone: Tone) {
  options.emit({ type: "notice", scope: context.scope, text, tone });
}

function record(
  options: PermissionOptions,
  context: ToolContext,
  call: ToolCall,
  reason: string,
  decision: string,
) {
  const data = { tool: call.name, input: call.input, reason, decision };
  options.log.record("permission", data, context.scope);
  options.log.transcript(
    "PERMISSION",
    `${reason}\nTool: ${call.name}(${JSON.stringify(call.input)})\nDecision: ${decision}`,
    context.scope,
  );
}

/**
 * The decision for one call, first decisive step wins: the deny list, a deny rule, an ask
 * rule, a write under `.claude/`, an allow rule, the built-in rules, otherwise run.
 */
export function decide(
  call: ToolCall,
  options: Pick<PermissionOptions, "workdir" | "rules" | "tools">,
): Decision {
  const command = call.name === "bash" ? String((call.input as { command?: unknown }).command) : "";
  const entry = call.name === "bash" ? denyListEntry(command) : null;
  if (entry) {
    return {
      action: "deny",
      gate: "deny list",
      message: `Permission denied by the deny list: '${entry}' is never allowed.`,
    };
  }
  const matching = (kind: RuleKind) =>
    options.rules.find((rule) => rule.kind === kind && ruleMatches(rule, call, options));
  const deny = matching("deny");
  if (deny) {
    return {
      action: "deny",
      gate: "deny rule",
      rule: deny,
      message: `Permission denied by deny rule ${deny.text} in ${deny.file}.`,
    };
  }
  const ask = matching("ask");
  if (ask) return { action: "ask", reason: `ask rule ${ask.text} in ${ask.file}` };
  const settingsWrite = claudeFolderWrite(call, options.workdir);
  if (settingsWrite) return { action: "ask", reason: settingsWrite };
  const allow = matching("allow");
  if (allow) return { action: "run", by: allow };
  const reason = builtInReason(call, command, options.workdir);
  return reason ? { action: "ask", reason } : { action: "run" };
}

/** Gate 2's built-in rules: a reason the call needs a human, or null. */
export function builtInReason(call: ToolCall, command: string, workdir: string): string | null {
  if (call.name === "bash") return destructiveReason(command);
  if (!PATH_TOOLS.has(call.name)) return null;
  const target = resolveInWorkspace(workdir, String((call.input as { path?: unknown }).path));
  if (isInside(target, workdir)) return null;
  return `Access outside workspace: ${realPathOf(target)}`;
}

/** Writes under `<WORKDIR>/.claude/` always ask: no rule can pre-allow them. */
function claudeFolderWrite(call: ToolCall, workdir: string): string | null {
  if (!WRITE_TOOLS.has(call.name)) return null;
  const target = resolveInWorkspace(workdir, String((call.input as { path?: unknown }).path));
  if (!isInside(target, path.join(workdir, ".claude"))) return null;
  return "Write to .claude/ (project settings, hooks and skills) always needs approval";
}

// ---------------------------------------------------------------------------------------
// Gate 1 and Gate 2 on shell commands
// ---------------------------------------------------------------------------------------

/** The deny-list entry a command hits at command position, or null. */
export function denyListEntry(command: string): string | null {
  for (const segment of parseCommand(command)) {
    if (segment.redirects.some((target) => target.startsWith("/dev/sd"))) return "> /dev/sda";
    const found = commandWord(segment);
    if (!found) continue;
    const { word, args } = found;
    if (word === "sudo" || word === "shutdown" || word === "reboot") return word;
    if (word === "mkfs" || word.startsWith("mkfs.")) return "mkfs";
    if (word === "dd" && args.some((arg) => arg.startsWith("if="))) return "dd if=";
    if (word === "rm" && removesRoot(args)) return "rm -rf /";
  }
  return null;
}

/** `rm` with recursive and force flags and `/` or `/*` as an operand. */
function removesRoot(args: string[]): boolean {
  let recursive = false;
  let force = false;
  let options = true;
  const operands: string[] = [];
  for (const arg of args) {
    if (options && arg === "--") options = false;
    else if (options && arg === "--recursive") recursive = true;
    else if (options && arg === "--force") force = true;
    else if (options && /^-[A-Za-z]+$/.test(arg)) {
      recursive ||= /[rR]/.test(arg);
      force ||= arg.includes("f");
    } else if (!(options && arg.startsWith("--"))) operands.push(arg);
  }
  return recursive && force && operands.some((op) => op === "/" || op === "/*");
}

/** Gate 2's reason for a command, or null: a deleting command word, chmod 777, > /etc/. */
export function destructiveReason(command: string): string | null {
  for (const segment of parseCommand(command)) {
    if (segment.redirects.some((target) => target.startsWith("/etc/"))) {
      return "Potentially destructive command: > /etc/";
    }
    const found = commandWord(segment);
    if (!found) continue;
    // Any case, and Windows flags glued on: `DEL test.txt`, `del/f x`, `rmdir/s/q build`.
    const word = found.word.toLowerCase().split("/")[0]!;
    if (DESTRUCTIVE_COMMANDS.includes(word)) return `Potentially destructive command: ${word}`;
    if (word === "chmod" && found.args.some((arg) => arg === "777" || arg === "0777")) {
      return "Potentially destructive command: chmod 777";
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------
// Settings rules: `Tool` or `Tool(specifier)` in Claude Code's syntax
// ---------------------------------------------------------------------------------------

/** Checks the `permissions` sections of the settings files; bad rules are reported, skipped. */
export function parseRules(files: SettingsFile[]): { rules: Rule[]; problems: string[] } {
  const rules: Rule[] = [];
  const problems: string[] = [];
  for (const file of files) {
    if (file.permissions === undefined) continue;
    const section = file.permissions;
    if (typeof section !== "object" || section === null || Array.isArray(section)) {
      problems.push(`${file.path}: "permissions" must be an object; no rules from it`);
      continue;
    }
    for (const kind of ["allow", "deny", "ask"] as const) {
      const list = (section as Record<string, unknown>)[kind];
      if (list === undefined) continue;
      if (!Array.isArray(list)) {
        problems.push(`${file.path}: permissions.${kind} must be a list of rules`);
        continue;
      }
      list.forEach((entry, index) => {
        const parsed = typeof entry === "string" ? parseRule(entry) : null;
        if (parsed) rules.push({ kind, text: entry as string, file: file.label, ...parsed });
        else {
          problems.push(
            `${file.path}: permissions.${kind}[${index}] ${JSON.stringify(entry)} is not a rule ` +
              "like Bash, Bash(npm test), Bash(git:*) or Read(src/**); skipped",
          );
        }
      });
    }
  }
  return { rules, problems };
}

function parseRule(text: string): { tool: string; specifier: string | null } | null {
  const match = /^\s*([A-Za-z_][\w-]*)\s*(?:\((.*)\))?\s*$/s.exec(text);
  if (!match) return null;
  const specifier = match[2];
  if (specifier !== undefined && specifier.trim() === "") return null;
  return { tool: match[1]!, specifier: specifier === undefined ? null : specifier.trim() };
}

/** Claude Code's `Edit(...)` rules also cover whole-file writes. */
const EXTRA_RULE_TOOLS: Record<string, string[]> = { Edit: ["write_file"] };

export function ruleMatches(
  rule: Rule,
  call: ToolCall,
  options: Pick<PermissionOptions, "workdir" | "rules" | "tools">,
): boolean {
  const aliases = options.tools.get(call.name)?.aliases ?? [];
  const named =
    rule.tool === call.name ||
    aliases.includes(rule.tool) ||
    (EXTRA_RULE_TOOLS[rule.tool] ?? []).includes(call.name);
  if (!named) return false;
  if (rule.specifier === null) return true;
  if (call.name === "bash") {
    return bashRuleMatches(rule, String((call.input as { command?: unknown }).command));
  }
  if (PATH_TOOLS.has(call.name)) {
    const target = realPathOf(
      resolveInWorkspace(options.workdir, String((call.input as { path?: unknown }).path)),
    );
    return pathRuleMatches(rule.specifier, target, options.workdir);
  }
  return false;
}

/**
 * `Bash(cmd)` matches the trimmed command exactly; `Bash(prefix:*)` matches `prefix` or
 * `prefix …`. A deny or ask rule matches when any part of a compound command does; an
 * allow rule only when every part does, so `Bash(safe:*)` never allows `safe && rm x`.
 */
function bashRuleMatches(rule: Rule, command: string): boolean {
  const spec = rule.specifier!;
  const one = (text: string) => {
    const trimmed = text.trim();
    if (!spec.endsWith(":*")) return trimmed === spec;
    const prefix = spec.slice(0, -2);
    return trimmed === prefix || trimmed.startsWith(`${prefix} `);
  };
  const parts = parseCommand(command).map((segment) => segment.text);
  if (rule.kind === "allow") return parts.length > 0 && parts.every(one);
  return one(command) || parts.some(one);
}

/**
 * Path globs, gitignore style: `//x` is absolute, `~/x` is under the home folder, `/x` and
 * `x/y` are relative to WORKDIR, and a bare name (`.env`, `*.key`) matches at any depth.
 */
function pathRuleMatches(spec: string, realTarget: string, workdir: string): boolean {
  const base = realPathOf(workdir);
  let pattern: string;
  if (spec.startsWith("//")) pattern = spec.slice(1);
  else if (spec.startsWith("~/")) pattern = path.join(os.homedir(), spec.slice(2));
  else if (spec.startsWith("/")) pattern = path.join(base, spec);
  else if (!spec.replace(/\/$/, "").includes("/")) pattern = path.join(base, "**", spec);
  else pattern = path.join(base, spec);
  if (spec.endsWith("/")) pattern = `${pattern}/**`;
  return picomatch.isMatch(realTarget, pattern, { dot: true });
}

// ---------------------------------------------------------------------------------------
// Reading a shell command: segments and the command word of each
// ---------------------------------------------------------------------------------------

export interface Segment {
  /** The segment's source text (for `Bash(...)` rules). */
  text: string;
  /** Words with quotes removed. */
  words: string[];
  /** Redirection targets (`> file`, `2>>file`, `&>file`). */
  redirects: string[];
}

/** Words skipped before the command word: assignments are handled separately. */
const RESERVED = new Set(["!", "then", "do", "else", "elif", "if", "while", "until", "{", "}"]);
const WRAPPERS = new Set(["env", "command", "exec", "nohup", "time", "xargs", "builtin"]);
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh"]);

/** The command word of a segment (after assignments, reserved words and wrappers). */
export function commandWord(segment: Segment): { word: string; args: string[] } | null {
  const words = segment.words;
  let i = 0;
  for (;;) {
    const word = words[i];
    if (word === undefined) return null;
    if (RESERVED.has(word) || /^[A-Za-z_]\w*=/.test(word)) i++;
    else if (WRAPPERS.has(word)) {
      i++;
      // A wrapper's own options (`env -i`, `xargs -n 1`) come before the command.
      while (words[i]?.startsWith("-") || /^\d+$/.test(words[i] ?? "")) i++;
    } else break;
  }
  const word = words[i]!;
  const name = word.startsWith("/") || word.startsWith(".") ? path.basename(word) : word;
  return { word: name, args: words.slice(i + 1) };
}

/**
 * Splits a command into segments at `;`, `&&`, `||`, `|`, `&`, newlines and parentheses
 * outside quotes. The insides of `$(…)` and backticks, and the script given to
 * `sh -c`/`bash -c`/`eval`, are read as commands too and added as more segments.
 */
export function parseCommand(command: string, depth = 0): Segment[] {
  const segments: Segment[] = [];
  const nested: string[] = [];
  let words: string[] = [];
  let redirects: string[] = [];
  let word = "";
  let inWord = false;
  let start = 0;
  let pendingRedirect = false;

  const endWord = () => {
    if (!inWord) return;
    if (pendingRedirect) redirects.push(word);
    else words.push(word);
    pendingRedirect = false;
    word = "";
    inWord = false;
  };
  const endSegment = (end: number) => {
    endWord();
    const text = command.slice(start, end).trim();
    if (words.length > 0 || redirects.length > 0) segments.push({ text, words, redirects });
    words = [];
    redirects = [];
  };

  let i = 0;
  while (i < command.length) {
    const c = command[i]!;
    if (c === "\\" && i + 1 < command.length) {
      if (command[i + 1] !== "\n") word += command[i + 1];
      inWord = true;
      i += 2;
    } else if (c === "'") {
      const close = command.indexOf("'", i + 1);
      const end = close === -1 ? command.length : close;
      word += command.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i = readDoubleQuoted(
        command,
        i + 1,
        (text) => {
          word += text;
        },
        nested,
      );
      inWord = true;
    } else if (c === "$" && command[i + 1] === "(") {
      const end = matchParen(command, i + 1);
      nested.push(command.slice(i + 2, end));
      word += command.slice(i, end + 1);
      inWord = true;
      i = end + 1;
    } else if (c === "`") {
      const close = command.indexOf("`", i + 1);
      const end = close === -1 ? command.length : close;
      nested.push(command.slice(i + 1, end));
      word += command.slice(i, end + 1);
      inWord = true;
      i = end + 1;
    } else if (c === "#" && !inWord) {
      const newline = command.indexOf("\n", i);
      i = newline === -1 ? command.length : newline;
    } else if (c === ">" || c === "<") {
      // `2>`, `&>`, `>>`, `>|`, `>&2`: a redirection; its target is the next word.
      if (inWord && /^\d+$/.test(word)) {
        word = "";
        inWord = false;
      } else endWord();
      i++;
      while (command[i] === ">" || command[i] === "|") i++;
      if (command[i] === "&") {
        i++;
        while (/[\d-]/.test(command[i] ?? "")) i++; // `>&2`, `>&-`: a descriptor, not a file
        continue;
      }
      pendingRedirect = true;
    } else if (c === "&" && command[i + 1] === ">") {
      endWord();
      i += 2;
      if (command[i] === ">") i++;
      pendingRedirect = true;
    } else if (";&|\n()".includes(c)) {
      endSegment(i);
      i += c === "&" && command[i + 1] === "&" ? 2 : c === "|" && command[i + 1] === "|" ? 2 : 1;
      start = i;
    } else if (c === " " || c === "\t") {
      endWord();
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  endSegment(command.length);

  if (depth < 8) {
    for (const segment of [...segments]) nested.push(...scriptsIn(segment));
    for (const inner of nested) segments.push(...parseCommand(inner, depth + 1));
  }
  return segments;
}

/** The script of `sh -c 'script'`, `bash -c …` or `eval …`, read as a command too. */
function scriptsIn(segment: Segment): string[] {
  const found = commandWord(segment);
  if (!found) return [];
  if (found.word === "eval") return [found.args.join(" ")];
  if (!SHELLS.has(found.word)) return [];
  const flag = found.args.findIndex((arg) => /^-[a-z]*c[a-z]*$/.test(arg));
  const script = flag === -1 ? undefined : found.args[flag + 1];
  return script === undefined ? [] : [script];
}

/** Reads a double-quoted string from `i` (after the quote); returns the index after it. */
function readDoubleQuoted(
  command: string,
  i: number,
  add: (text: string) => void,
  nested: string[],
): number {
  while (i < command.length && command[i] !== '"') {
    const c = command[i]!;
    if (c === "\\" && i + 1 < command.length) {
      add(command[i + 1]!);
      i += 2;
    } else if (c === "$" && command[i + 1] === "(") {
      const end = matchParen(command, i + 1);
      nested.push(command.slice(i + 2, end));
      add(command.slice(i, end + 1));
      i = end + 1;
    } else if (c === "`") {
      const close = command.indexOf("`", i + 1);
      const end = close === -1 ? command.length : close;
      nested.push(command.slice(i + 1, end));
      add(command.slice(i, end + 1));
      i = end + 1;
    } else {
      add(c);
      i++;
    }
  }
  return i + 1;
}

/** The index of the `)` that closes the `(` at `open`, skipping quotes (end of text if none). */
function matchParen(command: string, open: number): number {
  let depth = 0;
  for (let i = open; i < command.length; i++) {
    const c = command[i];
    if (c === "'") {
      const close = command.indexOf("'", i + 1);
      i = close === -1 ? command.length : close;
    } else if (c === "\\") i++;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return command.length;
}

/** This mechanism's part of the system prompt. */
export function permissionsSection() {
  return {
    id: "permissions",
    text:
      "Permissions: every tool call is checked before it runs. Destructive commands, access " +
      "outside the workspace and calls the project marks 'ask' need the user's approval; some " +
      "commands are never allowed. A denied call returns an error naming the gate: do not " +
      "retry it unchanged; find another way or ask the user.",
  };
}
