/**
 * Settings rules: `Tool` or `Tool(specifier)` in Claude Code's syntax, read from the
 * `permissions` sections of `.claude/settings*.json` (settings.ts) and matched against what a
 * call touches, its `target`. permissions.ts decides with them: deny > ask > allow.
 */
import os from "node:os";
import path from "node:path";
import { onFirstUse } from "shared";
import type { ToolCall } from "./contract.ts";
import { realPathOf, resolveInWorkspace } from "./paths.ts";
import { type DecideOptions, targetOf } from "./permissions.ts";
import type { SettingsFile } from "./settings.ts";
import { parseCommand } from "./shell-parse.ts";

/** The glob matcher for path rules, loaded when the first path rule is checked. */
const picomatch = onFirstUse<typeof import("picomatch")>(import.meta.url, "picomatch");

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

/**
 * True when `rule` names the call's tool and its specifier (if any) matches what the call
 * touches. A rule names a tool by the course's name or Claude Code's (`Bash`, `Read` …);
 * as in Claude Code, `Edit(...)` covers every tool that writes a file and `Read(...)` every
 * tool that reads one. The specifier is matched against the call's command or its path.
 */
export function ruleMatches(rule: Rule, call: ToolCall, options: DecideOptions): boolean {
  const target = targetOf(call, options.tools);
  const aliases = options.tools.get(call.name)?.aliases ?? [];
  const named =
    rule.tool === call.name ||
    aliases.includes(rule.tool) ||
    (rule.tool === "Edit" && target?.kind === "write") ||
    (rule.tool === "Read" && target?.kind === "read");
  if (!named) return false;
  if (rule.specifier === null) return true;
  if (target?.command !== undefined) return bashRuleMatches(rule, target.command);
  if (target?.path !== undefined) {
    const real = realPathOf(resolveInWorkspace(options.workdir, target.path));
    return pathRuleMatches(rule.specifier, real, options.workdir);
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
  return picomatch().isMatch(realTarget, pattern, { dot: true });
}
