/**
 * The permission pipeline: three gates before every tool call.
 *
 *   Gate 1  the deny list: commands never allowed, nobody is asked
 *   rules   `.claude/settings*.json` permissions: deny > ask > allow (permission-rules.ts)
 *   Gate 2  built-in rules that need a human: destructive commands, paths outside WORKDIR,
 *           writes to `.claude/` (the agent must not grant itself rules or hooks)
 *   Gate 3  the approval prompt; without a terminal the call is denied (fail closed)
 *
 * The gates never name a tool: each tool says what a call touches (its `target`: the
 * command it runs, the path it reads or writes), so a tool added later is judged without
 * an edit here. A call may arrive with a review's verdict (a PreToolUse hook's, as in
 * Claude Code): "allow" skips a built-in rule's question, "ask" asks where nothing else
 * would; the deny list, deny rules, ask rules and writes under `.claude/` hold either way. A denied call still gets a tool_result (is_error) that
 * names the gate, so the model learns why and can adapt. Commands are read at command
 * position by shell-parse.ts (`rm` as a command, not inside `echo rm x`): a heuristic that
 * catches honest mistakes, not a sandbox.
 */
import path from "node:path";
import type {
  EventSink,
  LineReader,
  SessionLog,
  Tone,
  ToolMap,
  ToolOutput,
  ToolTarget,
} from "shared";
import type { Mechanism, RunContext, ToolCall } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { isInside, realPathOf, resolveInWorkspace } from "./paths.ts";
import { parseRules, type Rule, type RuleKind, ruleMatches } from "./permission-rules.ts";
import { loadSettings, type SettingsFile } from "./settings.ts";
import { commandWord, parseCommand, type Segment } from "./shell-parse.ts";

interface DenyEntry {
  /** How the denial names it. */
  entry: string;
  /** True when one segment of a command (its command word and arguments) hits the entry. */
  hits(word: string, args: string[], segment: Segment): boolean;
}

/** Gate 1: what is never allowed, each entry matched at command position. */
export const DENY_LIST: DenyEntry[] = [
  // First: a redirection onto a disk is named as such, whatever command writes it.
  {
    entry: "> /dev/sda",
    hits: (_word, _args, segment) => segment.redirects.some((to) => to.startsWith("/dev/sd")),
  },
  { entry: "rm -rf /", hits: (word, args) => word === "rm" && removesRoot(args) },
  { entry: "sudo", hits: (word) => word === "sudo" },
  { entry: "shutdown", hits: (word) => word === "shutdown" },
  { entry: "reboot", hits: (word) => word === "reboot" },
  { entry: "mkfs", hits: (word) => word === "mkfs" || word.startsWith("mkfs.") },
  { entry: "dd if=", hits: (word, args) => word === "dd" && args.some((a) => a.startsWith("if=")) },
];
/** Gate 2: command words that delete. */
export const DESTRUCTIVE_COMMANDS = ["rm", "rmdir", "unlink", "del", "erase"];

export type Decision =
  | { action: "run"; by?: Rule }
  | { action: "deny"; gate: "deny list" | "deny rule"; message: string; rule?: Rule }
  | {
      action: "ask";
      reason: string /** An ask rule or a .claude/ write: no verdict skips it. */;
      firm?: true;
    };

export interface PermissionOptions {
  rules: Rule[];
  reader: Pick<LineReader, "ask" | "isTTY">;
  emit: EventSink;
  log: SessionLog;
}

/** What a decision needs to know: the rules, the run's workspace and its tools. */
export interface DecideOptions {
  workdir: string;
  rules: Rule[];
  /** The run's tools: their aliases and targets let `Bash(...)`, `Read(...)` … match. */
  tools: ToolMap;
}

/** The pipeline as the loop's `beforeToolCall` seam: a refusal, or null to run the call. */
export function createPermissionGate(options: PermissionOptions) {
  return async (call: ToolCall, run: RunContext): Promise<ToolOutput | null> => {
    const decision = decide(call, { workdir: run.workdir, rules: options.rules, tools: run.tools });
    const verdict = call.verdict;
    const why = verdict?.reason ? `: ${verdict.reason}` : "";
    if (decision.action === "run") {
      if (verdict?.decision === "ask")
        return approve(call, `${verdict.by} asks${why}`, options, run);
      if (decision.by) {
        const rule = `allow rule ${decision.by.text} in ${decision.by.file}`;
        notice(options, run, `[allowed] by ${rule}`, "dim");
        record(options, run, call, rule, "allow");
      }
      return null;
    }
    if (decision.action === "deny") {
      const tone = decision.gate === "deny list" ? "error" : "warn";
      const tag = decision.gate === "deny list" ? "[blocked]" : "[denied]";
      notice(options, run, `${tag} ${decision.message}`, tone);
      record(options, run, call, decision.gate, "deny");
      return denied(decision.message, decision.gate, decision.message, false);
    }
    if (verdict?.decision === "allow" && !decision.firm) {
      notice(options, run, `[allowed] by ${verdict.by}${why} (${decision.reason})`, "dim");
      record(options, run, call, verdict.by, "allow");
      return null;
    }
    return approve(call, decision.reason, options, run);
  };
}

/** Gate 3: show the whole call, then ask; only `y`/`yes` approve. */
async function approve(
  call: ToolCall,
  reason: string,
  options: PermissionOptions,
  run: RunContext,
): Promise<ToolOutput | null> {
  notice(options, run, `[permission] ${reason}`, "warn");
  notice(options, run, `   Tool: ${call.name}(${JSON.stringify(call.input)})`, "warn");
  // Only a typed line's turn has someone at the prompt: a turn nobody typed runs while
  // nobody waits for a question, and without a terminal nobody can answer at all.
  const nobody =
    run.turn !== "user"
      ? `a ${run.turn} turn cannot ask the user`
      : options.reader.isTTY
        ? null
        : "stdin is not a terminal";
  if (nobody !== null) {
    const message =
      `Permission denied: approval needed (${reason}) but ${nobody}; ` +
      "an allow rule in .claude/settings.json can permit this call.";
    notice(options, run, `[denied] ${message}`, "warn");
    // Nobody sees a question in a turn no one typed: one line says which turn denied what.
    if (run.turn !== "user") {
      const shown = `${call.name}(${JSON.stringify(call.input)})`;
      notice(options, run, `[permission] denied (${run.turn} turn): ${shown}`, "warn");
    }
    record(
      options,
      run,
      call,
      reason,
      `deny (${run.turn === "user" ? "no terminal" : `${run.turn} turn`})`,
    );
    return denied(message, "approval", reason, true);
  }
  const prefix = run.scope === "main" ? "" : `  [${run.scope}] `;
  const answer = await options.reader.ask(`${prefix}   Allow? [y/N] `);
  const yes = answer !== null && ["y", "yes"].includes(answer.trim().toLowerCase());
  record(options, run, call, reason, yes ? "allow" : "deny");
  if (yes) return null;
  const message = `Permission denied by the user at the approval prompt (${reason}).`;
  notice(options, run, `[denied] ${message}`, "warn");
  return denied(message, "approval", reason, false);
}

/** A refusal as the model reads it, and as data: which gate, why, whether approval would do. */
function denied(message: string, gate: string, reason: string, approvable: boolean): ToolOutput {
  return { content: message, isError: true, quiet: true, denied: { gate, reason, approvable } };
}

function notice(options: PermissionOptions, run: RunContext, text: string, tone: Tone) {
  options.emit({ type: "notice", scope: run.scope, text, tone });
}

function record(
  options: PermissionOptions,
  run: RunContext,
  call: ToolCall,
  reason: string,
  decision: string,
) {
  const data = { tool: call.name, input: call.input, reason, decision };
  options.log.record("permission", data, run.scope);
  options.log.transcript(
    "PERMISSION",
    `${reason}\nTool: ${call.name}(${JSON.stringify(call.input)})\nDecision: ${decision}`,
    run.scope,
  );
}

/** What `call` touches, as its tool declares it (nothing, for a tool without a target). */
export function targetOf(call: ToolCall, tools: ToolMap): ToolTarget | null {
  return tools.get(call.name)?.target?.(call.input) ?? null;
}

/**
 * The decision for one call, first decisive step wins: the deny list, a deny rule, an ask
 * rule, a write under `.claude/`, an allow rule, the built-in rules, otherwise run.
 */
export function decide(call: ToolCall, options: DecideOptions): Decision {
  const target = targetOf(call, options.tools);
  const entry = target?.command === undefined ? null : denyListEntry(target.command);
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
  if (ask) return { action: "ask", reason: `ask rule ${ask.text} in ${ask.file}`, firm: true };
  const settingsWrite = claudeFolderWrite(target, options.workdir);
  if (settingsWrite) return { action: "ask", reason: settingsWrite, firm: true };
  const allow = matching("allow");
  if (allow) return { action: "run", by: allow };
  const reason = builtInReason(target, options.workdir);
  return reason ? { action: "ask", reason } : { action: "run" };
}

/** Gate 2's built-in rules: a reason the call needs a human, or null. */
export function builtInReason(target: ToolTarget | null, workdir: string): string | null {
  // A tool may say that every call asks (`target.ask`): only a rule in the settings skips it.
  if (target?.ask) return target.ask;
  if (target?.command !== undefined) {
    const reason = destructiveReason(target.command);
    if (reason) return reason;
  }
  if (target?.path === undefined) return null;
  const resolved = resolveInWorkspace(workdir, target.path);
  if (isInside(resolved, workdir)) return null;
  return `Access outside workspace: ${realPathOf(resolved)}`;
}

/** Writes under `<WORKDIR>/.claude/` always ask: no rule can pre-allow them. */
function claudeFolderWrite(target: ToolTarget | null, workdir: string): string | null {
  if (target?.kind !== "write" || target.path === undefined) return null;
  const resolved = resolveInWorkspace(workdir, target.path);
  if (!isInside(resolved, path.join(workdir, ".claude"))) return null;
  return "Write to .claude/ (project settings, hooks and skills) always needs approval";
}

// ---------------------------------------------------------------------------------------
// Gate 1 and Gate 2 on shell commands
// ---------------------------------------------------------------------------------------

/** The deny-list entry a command hits at command position, or null. */
export function denyListEntry(command: string): string | null {
  for (const segment of parseCommand(command)) {
    const found = commandWord(segment);
    const word = found?.word ?? "";
    const args = found?.args ?? [];
    const hit = DENY_LIST.find((deny) => deny.hits(word, args, segment));
    if (hit) return hit.entry;
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
  // `//`, `/.` and `/./` name the root too.
  const root = (op: string) => ["/", "/*"].includes(path.posix.normalize(op));
  return recursive && force && operands.some(root);
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

/**
 * The pipeline as a mechanism: the settings rules, read once at start and shown in the
 * banner, and the gates before every tool call of every agent.
 */
export function permissionsMechanism(
  harness: Pick<Harness, "workdir" | "emit" | "log" | "reader">,
): Mechanism {
  const settings = loadSettings(harness.workdir);
  const { rules, problems } = parseRules(settings.files);
  const gate = createPermissionGate({
    rules,
    emit: harness.emit,
    log: harness.log,
    // The reader exists once the session starts; approvals are asked only then.
    get reader() {
      return harness.reader;
    },
  });
  const count = (file: SettingsFile, kind: RuleKind) =>
    rules.filter((rule) => rule.file === file.label && rule.kind === kind).length;
  return {
    name: "permissions",
    sections: () => [permissionsSection()],
    loop: () => ({ beforeToolCall: gate }),
    start: () => [
      ...[...settings.problems, ...problems].map((problem) => ({
        text: `[settings] ${problem}`,
        tone: "warn" as const,
      })),
      ...settings.files.map((file) => ({
        text: `[permissions] ${file.label}: ${count(file, "allow")} allow, ${count(file, "deny")} deny, ${count(file, "ask")} ask rules`,
        tone: "dim" as const,
      })),
    ],
  };
}
