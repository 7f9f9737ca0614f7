/**
 * The chapter table every carry-forward suite reads. A mechanism's suite covers the
 * chapters from the one that introduces it (`chaptersFrom`); a chapter that deliberately
 * changes a behaviour says so in `CHANGED` (no silent skips). Suites that test modules
 * directly rather than through `main` run on each distinct version of those modules
 * (`moduleVersions`: a later version the newest chapter still has runs there); suites that
 * run through `main` are carried to those versions and the newest chapter (`carried`), and their edge cases run where their own modules differ and
 * on the newest chapter (`runsEdgeCases`). Demos and command-line runs cover every chapter.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { it } from "vitest";

export interface Chapter {
  id: string;
  dir: string;
  title: string;
}

export const CHAPTERS: Chapter[] = [
  { id: "s01", dir: "s01-loop", title: "Agent Loop" },
  { id: "s02", dir: "s02-tools", title: "Tool Use" },
  { id: "s03", dir: "s03-permissions", title: "Permissions" },
  { id: "s04", dir: "s04-hooks", title: "Hooks" },
  { id: "s05", dir: "s05-todo", title: "TodoWrite" },
  { id: "s06", dir: "s06-subagent", title: "Subagent" },
  { id: "s07", dir: "s07-skills", title: "Skill Loading" },
  { id: "s08", dir: "s08-compact", title: "Context Compact" },
  { id: "s09", dir: "s09-memory", title: "Memory" },
  { id: "s10", dir: "s10-tasks", title: "Task System" },
  { id: "s11", dir: "s11-background", title: "Background Tasks" },
  { id: "s12", dir: "s12-cron", title: "Cron Scheduler" },
  { id: "s13", dir: "s13-teams", title: "Agent Teams" },
  { id: "s14", dir: "s14-mcp", title: "MCP Plugin" },
  { id: "s15", dir: "s15-integrated", title: "Integrated Harness" },
  { id: "s16", dir: "s16-workflow", title: "Workflow Runtime" },
  { id: "s17", dir: "s17-goal", title: "Goal Loop" },
];

/** The five tools every chapter from s02 offers first, in order (and every subagent's set). */
export const BASE_TOOLS = ["bash", "read_file", "write_file", "edit_file", "glob"];

/** s10's six task tools, in order. */
export const TASK_TOOLS = [
  "create_task",
  "update_task",
  "list_tasks",
  "get_task",
  "claim_task",
  "complete_task",
];

/** The main agent's fifteen tools in s10 and s11, in order; later chapters add after them. */
export const S10_TOOLS = [
  ...BASE_TOOLS,
  "todo_write",
  "task",
  "load_skill",
  "compact",
  ...TASK_TOOLS,
];

/** The lead's twenty-five tools in s13: s10's, s12's cron tools, then s13's team tools. */
export const S13_TOOLS = [
  ...S10_TOOLS,
  "schedule_cron",
  "list_crons",
  "cancel_cron",
  "spawn_teammate",
  "list_teammates",
  "send_message",
  "request_shutdown",
  "request_plan",
  "review_plan",
  "create_worktree",
];

/** Behaviours a later chapter replaces on purpose: the suite stops at `until` (exclusive). */
export const CHANGED: Record<string, { until: string; why: string }> = {
  "the main agent's answer arrives whole": {
    until: "s15",
    why: "s15 streams the main agent's replies: the text is printed as it arrives (text_delta events)",
  },
  "Ctrl-C during a turn ends the session": {
    until: "s15",
    why: "s15 cancels the turn instead, repairs its history and goes on to the next line (interrupt.ts)",
  },
  "a job that ends between turns waits for the next line": {
    until: "s15",
    why: "from s15 a job that ends while the agent is idle wakes it: a background turn of its own",
  },
  "the first reply cut off at max_tokens is the answer": {
    until: "s15",
    why: "s15 asks again with 16 000 tokens, then twice to continue, before a cut-off answer stands",
  },
  "a failed model call is the caller's error": {
    until: "s15",
    why: "s15's recovery.ts retries 429, 529, 5xx and lost connections up to three times on every model call",
  },
  "a turn nobody typed denies without naming itself": {
    until: "s15",
    why: "from s15 each such denial also prints `[permission] denied (<kind> turn): <call>` (permissions.ts)",
  },
  "block list": {
    until: "s03",
    why: "s03 replaces guard.ts (block list + workspace refusal) with the permission pipeline",
  },
  "large results reach the model whole": {
    until: "s08",
    why: "s08 moves every result over 30 000 characters to a file and sends a preview",
  },
  "sample hooks print what they do": {
    until: "s05",
    why: "from s05 a hook outcome that changes nothing goes to the session log only, as in Claude Code",
  },
  "workspace refusal": {
    until: "s03",
    why: "s03 turns guard.ts's hard refusal of paths outside WORKDIR into an approval",
  },
};

const number = (id: string) => Number(id.slice(1));

/**
 * Where the contract (contract.ts) gains each turn kind, role, seam, member and type: a chapter
 * has it from there on, and a suite tests it only where the chapter has it.
 */
export const CONTRACT = {
  turn: { user: "s01", scheduled: "s12", team: "s13", background: "s15" },
  role: { main: "s01", subagent: "s06", teammate: "s13" },
  origin: { compaction: "s08", notification: "s11" },
  seam: { reviewToolCall: "s04", beforeCalls: "s15", beforeStop: "s17" },
  member: { extendCommand: "s13", extendClient: "s15", busy: "s17" },
  type: { CallOverrides: "s15" },
} as const;

type Gains = { [K in keyof typeof CONTRACT]: keyof (typeof CONTRACT)[K] };

/** Whether `chapter`'s contract has `name` (a turn kind, role, origin, seam, member or type). */
export function hasContract<K extends keyof Gains>(
  chapter: Chapter,
  kind: K,
  name: Gains[K],
): boolean {
  const from = (CONTRACT[kind] as Record<string, string>)[name as string];
  if (from === undefined) throw new Error(`no CONTRACT.${kind} entry for '${String(name)}'`);
  return number(chapter.id) >= number(from);
}

/** The turn kinds of `chapter`'s contract other than "user", in the order they arrive. */
export function unattendedTurns(chapter: Chapter): Array<"scheduled" | "team" | "background"> {
  return (["scheduled", "team", "background"] as const).filter((kind) =>
    hasContract(chapter, "turn", kind),
  );
}

/**
 * How many times a fault the recovery layer retries must hit one model call before its
 * error reaches the caller: once, until s15 tries each call four times.
 */
export function attemptsPerCall(chapter: Chapter): number {
  const once = chaptersFrom("s01", "a failed model call is the caller's error");
  return once.some((c) => c.id === chapter.id) ? 1 : 4;
}

/** Chapters from `first` on, stopping before the chapter named by `behaviour` in CHANGED. */
export function chaptersFrom(first: string, behaviour?: string): Chapter[] {
  const until = behaviour ? CHANGED[behaviour]?.until : undefined;
  if (behaviour && !until) throw new Error(`no CHANGED entry for '${behaviour}'`);
  return CHAPTERS.filter(
    (chapter) =>
      number(chapter.id) >= number(first) && (!until || number(chapter.id) < number(until)),
  );
}

/**
 * For suites that test a chapter's modules directly (not through `main`): one chapter for
 * each version of `entries` (with every chapter file they import) from `first` on (as
 * `chaptersFrom`). `course check` keeps a file that a chapter does not change
 * byte-identical to the previous chapter's, so running such a suite on an identical copy
 * again proves nothing new and costs a few seconds per chapter; suites that run a chapter
 * through `main` (its composition) use `runsEdgeCases`.
 *
 * A version is tested on the chapter that introduces it, except a later version that the
 * newest chapter of the range still has: the newest chapter runs it, as it runs every suite
 * through `main` anyway (`carried`), so those files are not tested twice. `first` always
 * tests its own version: every chapter runs its own mechanism's suite.
 */
export function moduleVersions(first: string, entries: string[], behaviour?: string): Chapter[] {
  const candidates = chaptersFrom(first, behaviour);
  const kept: Chapter[] = [];
  let previous = "";
  for (const chapter of candidates) {
    const digest = closureDigest(chapter, entries);
    if (digest !== previous) kept.push(chapter);
    previous = digest;
  }
  if (kept.length > 1) kept[kept.length - 1] = candidates.at(-1)!;
  return kept;
}

/**
 * Whether a suite's edge cases run through `main` on `chapter`. Every chapter the suite
 * is carried to runs its contract: its mechanism at work in that chapter's composition.
 * The edge cases (parameter variants, error paths, rarer replies) run where the modules
 * that decide them differ (`modules`, from `moduleVersions`) and on the newest chapter. Chapters are
 * cumulative copies, so a later mechanism that breaks an edge case of an earlier one breaks
 * it in every chapter after it, the newest included; the copies in between run the same
 * code in a smaller composition and would only find it again.
 */
export function runsEdgeCases(chapter: Chapter, modules: Chapter[]): boolean {
  return chapter === CHAPTERS.at(-1) || modules.some((c) => c.id === chapter.id);
}

/**
 * The chapters of `range` a suite that runs through `main` is carried to: where the modules
 * that decide it differ (`modules`, from `moduleVersions`; a mechanism's first chapter always
 * is one) and the newest chapter of `range`. A chapter in between runs byte-identical copies
 * of those files in a composition that `course check` proves is the previous chapter's list
 * of mechanisms plus its own, in the same order; a later mechanism that breaks an earlier
 * one breaks it in every chapter after it, the newest included. Every chapter still runs its
 * own mechanism's suite, its offline demo and its command-line run.
 */
export function carried(range: Chapter[], ...modules: Array<Chapter[] | Set<string>>): Chapter[] {
  const newest = range.at(-1);
  const differs = (chapter: Chapter) =>
    modules.some((set) =>
      set instanceof Set ? set.has(chapter.id) : set.some((c) => c.id === chapter.id),
    );
  return range.filter((chapter) => chapter === newest || differs(chapter));
}

/** `it` where the chapter runs the suite's edge cases (`runsEdgeCases`); elsewhere nothing. */
export function edgeCase(
  chapter: Chapter,
  modules: Chapter[],
): (name: string, test: () => Promise<void> | void, timeoutMs?: number) => void {
  return runsEdgeCases(chapter, modules) ? it : () => {};
}

/** The cases of a parameterised edge case: all of them where `runsEdgeCases`, else the first. */
export function casesFor<T>(chapter: Chapter, cases: T[], modules: Chapter[]): T[] {
  return runsEdgeCases(chapter, modules) ? cases : cases.slice(0, 1);
}

/**
 * What a file runs, near enough: its text without comments, without its type-only
 * declarations (`interface`, `type`, `import type`) and with whitespace collapsed. A chapter
 * that only widens a type of the contract, or rewords a comment, runs the same code as the
 * chapter before it, so that alone does not make a new version of a module. Types written
 * inline stay (they only ever make two versions look different, never the same).
 */
const codeCache = new Map<string, string>();
export function codeOf(source: string): string {
  let code = codeCache.get(source);
  if (code === undefined) {
    code = withoutTypeDeclarations(withoutComments(source)).replace(/\s+/g, " ").trim();
    codeCache.set(source, code);
  }
  return code;
}

/** `source` with its comments blanked; strings and template literals are kept as they are. */
function withoutComments(source: string): string {
  let out = "";
  for (let i = 0; i < source.length; ) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      while (i < source.length && source[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      i = end < 0 ? source.length : end + 2;
      out += " ";
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === "\\" ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** `code` without `interface` blocks, `type` aliases and `import type` statements. */
function withoutTypeDeclarations(code: string): string {
  const start = /^(?:export )?(?:interface \w+[^{]*\{|type \w+[^=]*=|import type [^;]*;)/gm;
  let out = "";
  let from = 0;
  for (const match of code.matchAll(start)) {
    if (match.index < from) continue;
    out += code.slice(from, match.index);
    let i = match.index + match[0].length;
    if (match[0].startsWith("import")) {
      from = i;
      continue;
    }
    // To the brace that closes the interface, or the alias's `;` outside any bracket.
    let depth = match[0].endsWith("{") ? 1 : 0;
    for (; i < code.length; i++) {
      const c = code[i];
      if (c === "{" || c === "(" || c === "[" || c === "<") depth++;
      else if (c === "}" || c === ")" || c === "]" || (c === ">" && code[i - 1] !== "=")) depth--;
      if (depth === 0 && (match[0].endsWith("{") ? c === "}" : c === ";")) break;
    }
    from = i + 1;
  }
  return out + code.slice(from);
}

/**
 * The files every mechanism runs on: the contract, the loop, the REPL, the harness and the
 * prompt. Each of their versions is tested by the suites that list them (seams, loop, log),
 * and the chapters are cumulative, so whatever a version adds is still in the newest
 * chapter, which runs every suite. A mechanism's suite therefore counts a foundation file
 * only when it lists the file itself: a contract that grows a member in a later chapter is
 * not a new version of memory.ts.
 */
const FOUNDATION = new Set(["contract.ts", "loop.ts", "repl.ts", "harness.ts", "prompt.ts"]);

/**
 * A digest of the code of `entries` and the chapter files they import (a missing file counts
 * too), the foundation only where listed.
 */
function closureDigest(chapter: Chapter, entries: string[]): string {
  const src = path.join(chapterDir(chapter), "src");
  const seen = new Map<string, string>();
  const visit = (file: string, listed: boolean) => {
    if (seen.has(file)) return;
    // The foundation counts only where a suite lists it (see FOUNDATION).
    if (!listed && FOUNDATION.has(file)) return;
    const full = path.join(src, file);
    const text = existsSync(full) ? readFileSync(full, "utf8") : "(missing)";
    seen.set(file, text);
    // Static value imports only: `import type` is erased, and harness.ts's lazy import of
    // the demo runs only in the offline fallback, which these suites never start.
    for (const match of text.matchAll(/^import (?!type )[^;]*?from "\.\/([\w.-]+\.ts)";/gms)) {
      visit(match[1]!, false);
    }
  };
  for (const entry of entries) visit(entry, true);
  const hash = createHash("sha256");
  for (const [file, text] of [...seen].sort(([a], [b]) => a.localeCompare(b))) {
    hash.update(`${file}\0${codeOf(text)}\0`);
  }
  return hash.digest("hex");
}

export function chapterDir(chapter: Chapter): string {
  return new URL(`../chapters/${chapter.dir}/`, import.meta.url).pathname;
}

/** Imports one of a chapter's modules; exports keep their names in every later chapter. */
export function importChapter<T>(chapter: Chapter, file: string): Promise<T> {
  const url = new URL(`../chapters/${chapter.dir}/src/${file}`, import.meta.url);
  return import(/* @vite-ignore */ url.pathname) as Promise<T>;
}
