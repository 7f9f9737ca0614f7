/**
 * `pnpm course` — tools for working on the chapter-by-chapter course.
 *
 *   course diff <a> <b> [--all]     what chapter b adds on top of chapter a
 *   course stats                    Markdown table of every chapter's delta
 *   course sync <file> --from <sNN> carry an edit forward to later chapters
 *   course check [--no-demos]       layout, drift, the shape of each chapter, README excerpts,
 *                                   the README rules and transcripts (scripts/readme-check.ts)
 *   course log <api.jsonl> [--request N]
 *                                   rebuild the requests a session log recorded
 *   course site [--out DIR] [--serve] [--port N]
 *                                   the course as a static site (scripts/site.ts)
 *
 * Chapter N is chapter N-1 plus one mechanism, so most files are copies of the
 * previous chapter's. Everything here is about keeping those copies honest.
 * Every function takes the repo root explicitly so the tests can run it against
 * fixture trees.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readRequests } from "shared";
import { inLanguage, LANGS, LANGUAGE, type Lang, langOf } from "./languages.ts";
import { checkReadmes, checkTranscripts } from "./readme-check.ts";

// ---------------------------------------------------------------------------
// Errors, colour, output

/** An error meant for the user: one line of text plus the exit code to use. */
export class CourseError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super(message);
    this.name = "CourseError";
    this.exitCode = exitCode;
  }
}

/** Where `main` writes. `write` is stdout, `error` is stderr; both take whole lines. */
export interface Io {
  write(text: string): void;
  error(text: string): void;
  color: boolean;
}

/** Colour only on a TTY with NO_COLOR unset; FORCE_COLOR (set and not "0") forces it on. */
export function colorEnabled(isTTY: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "" && force !== "0" && force !== "false") return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return isTTY === true;
}

function processIo(): Io {
  return {
    write: (text) => process.stdout.write(text),
    error: (text) => process.stderr.write(text),
    color: colorEnabled(process.stdout.isTTY, process.env),
  };
}

const paint = (code: number, close: number) => (on: boolean, text: string) =>
  on ? `\x1b[${code}m${text}\x1b[${close}m` : text;
const bold = paint(1, 22);
const red = paint(31, 39);
const green = paint(32, 39);
const cyan = paint(36, 39);

/** The repo root, found from this script's own location (scripts/course.ts). */
export const DEFAULT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

// ---------------------------------------------------------------------------
// Chapters and their files

export interface Chapter {
  /** "s07" */
  id: string;
  /** 7 */
  num: number;
  /** "s07-bash" — the folder name under chapters/ */
  folder: string;
  /** absolute path of the chapter folder */
  dir: string;
}

const CHAPTER_DIR = /^s(\d\d)-/;

/** Chapters found under `<root>/chapters`, sorted by number (then folder name). */
export function listChapters(root: string): Chapter[] {
  const base = path.join(root, "chapters");
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(base, { withFileTypes: true });
  } catch {
    throw new CourseError(`no chapters/ folder in ${root}`);
  }
  const chapters: Chapter[] = [];
  for (const entry of entries) {
    const m = CHAPTER_DIR.exec(entry.name);
    if (!entry.isDirectory() || m === null) continue;
    const num = Number(m[1]);
    chapters.push({
      id: `s${m[1]}`,
      num,
      folder: entry.name,
      dir: path.join(base, entry.name),
    });
  }
  return chapters.sort((a, b) => a.num - b.num || compareStrings(a.folder, b.folder));
}

/** Find a chapter by id ("s07"), folder name ("s07-bash") or number ("7", "07"). */
export function resolveChapter(chapters: readonly Chapter[], ref: string): Chapter {
  const wanted = ref.trim().toLowerCase().replace(/\/+$/, "");
  const byFolder = chapters.find((c) => c.folder.toLowerCase() === wanted);
  if (byFolder !== undefined) return byFolder;
  const m = /^s?(\d{1,2})$/.exec(wanted);
  const matches = m === null ? [] : chapters.filter((c) => c.num === Number(m[1]));
  if (matches.length === 1 && matches[0] !== undefined) return matches[0];
  const ids = chapters.map((c) => c.id).join(", ");
  if (matches.length > 1) {
    const folders = matches.map((c) => c.folder).join(", ");
    throw new CourseError(`ambiguous chapter "${ref}": matches ${folders}`);
  }
  throw new CourseError(`unknown chapter "${ref}": valid ids are ${ids || "(none)"}`);
}

/** Never part of a chapter: install and run-time artefacts. */
const SKIP_DIRS = new Set(["node_modules", ".turbo", ".harness", ".git"]);

/** Prose and package metadata: only compared with --all. */
export function isCodeFile(rel: string): boolean {
  const name = rel.split("/").pop() ?? rel;
  if (/^README.*\.md$/.test(name)) return false;
  return name !== "package.json" && name !== "tsconfig.json";
}

/** Relative posix paths of a chapter's files, sorted; code only unless `all`. */
export function listFiles(dir: string, all = false): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string) => {
    for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
      const childRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) walk(path.join(abs, entry.name), childRel);
      } else if (entry.isFile() && (all || isCodeFile(childRel))) {
        out.push(childRel);
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir, "");
  return out.sort(compareStrings);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function readMaybe(file: string): Buffer | null {
  try {
    return fs.readFileSync(file);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// Line diff (Myers, O((N+M)·D)) and unified hunks

export type EditKind = "equal" | "delete" | "insert";

/** One line of an edit script. `text` keeps its "\n" (the last line may lack one). */
export interface Edit {
  kind: EditKind;
  text: string;
}

/** Split into lines that keep their "\n", so a missing final newline is a real difference. */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n").map((line) => `${line}\n`);
  const last = lines.length - 1;
  // split() leaves "" after a final "\n"; otherwise the last line had no newline.
  if (lines[last] === "\n") lines.pop();
  else lines[last] = (lines[last] ?? "").slice(0, -1);
  return lines;
}

/**
 * Shortest edit script from `a` to `b` (Myers 1986). On ties the search prefers a
 * deletion, so within each changed region deletions come before insertions, as in `diff -u`.
 */
export function diffLines(a: readonly string[], b: readonly string[]): Edit[] {
  // Common prefix and suffix never need the search.
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (
    suf < a.length - pre &&
    suf < b.length - pre &&
    a[a.length - 1 - suf] === b[b.length - 1 - suf]
  ) {
    suf++;
  }
  const head: Edit[] = a.slice(0, pre).map((text) => ({ kind: "equal", text }));
  const tail: Edit[] = a.slice(a.length - suf).map((text) => ({ kind: "equal", text }));
  const middle = myers(a.slice(pre, a.length - suf), b.slice(pre, b.length - suf));
  return [...head, ...middle, ...tail];
}

function myers(a: readonly string[], b: readonly string[]): Edit[] {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((text) => ({ kind: "insert", text }));
  if (m === 0) return a.map((text) => ({ kind: "delete", text }));
  const max = n + m;
  const off = max + 1;
  // v[off + k] = furthest x reached on diagonal k; trace[d] = v before round d.
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  const at = (arr: Int32Array, k: number) => arr[off + k] ?? 0;
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && at(v, k - 1) < at(v, k + 1)) ? at(v, k + 1) : at(v, k - 1) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  // Walk back from (n, m) through the saved rounds.
  const edits: Edit[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const prev = trace[d] ?? v;
    const k = x - y;
    const down = k === -d || (k !== d && at(prev, k - 1) < at(prev, k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prev, prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      edits.push({ kind: "equal", text: a[x - 1] ?? "" });
      x--;
      y--;
    }
    if (d > 0) {
      if (down) edits.push({ kind: "insert", text: b[y - 1] ?? "" });
      else edits.push({ kind: "delete", text: a[x - 1] ?? "" });
    }
    x = prevX;
    y = prevY;
  }
  return edits.reverse();
}

export interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  edits: Edit[];
}

/** Group an edit script into unified-diff hunks with `context` lines around each change. */
export function buildHunks(edits: readonly Edit[], context = 3): Hunk[] {
  // Line positions before each edit, on both sides.
  const oldPos: number[] = [];
  const newPos: number[] = [];
  let o = 0;
  let nw = 0;
  for (const edit of edits) {
    oldPos.push(o);
    newPos.push(nw);
    if (edit.kind !== "insert") o++;
    if (edit.kind !== "delete") nw++;
  }
  const changes: number[] = [];
  edits.forEach((edit, i) => {
    if (edit.kind !== "equal") changes.push(i);
  });
  const hunks: Hunk[] = [];
  let i = 0;
  while (i < changes.length) {
    const first = changes[i] ?? 0;
    let last = first;
    // Merge the next change in when the equal lines between them fit in two contexts.
    while (i + 1 < changes.length && (changes[i + 1] ?? 0) - last - 1 <= 2 * context) {
      i++;
      last = changes[i] ?? last;
    }
    i++;
    const start = Math.max(0, first - context);
    const end = Math.min(edits.length - 1, last + context);
    const slice = edits.slice(start, end + 1);
    const oldCount = slice.filter((e) => e.kind !== "insert").length;
    const newCount = slice.filter((e) => e.kind !== "delete").length;
    const o0 = oldPos[start] ?? 0;
    const n0 = newPos[start] ?? 0;
    hunks.push({
      oldStart: oldCount === 0 ? o0 : o0 + 1,
      oldCount,
      newStart: newCount === 0 ? n0 : n0 + 1,
      newCount,
      edits: slice,
    });
  }
  return hunks;
}

// ---------------------------------------------------------------------------
// Comparing two chapters

export type FileStatus = "added" | "removed" | "changed";

export interface FileChange {
  path: string;
  status: FileStatus;
  /** lines added / removed */
  added: number;
  removed: number;
  binary: boolean;
  hunks: Hunk[];
}

function isBinary(buf: Buffer): boolean {
  return buf.includes(0);
}

/** Per-file changes from chapter `a` to chapter `b`, sorted by path; identical files left out. */
export function compareChapters(a: Chapter | null, b: Chapter, all = false): FileChange[] {
  const aFiles = a === null ? [] : listFiles(a.dir, all);
  const bFiles = listFiles(b.dir, all);
  const paths = [...new Set([...aFiles, ...bFiles])].sort(compareStrings);
  const changes: FileChange[] = [];
  for (const rel of paths) {
    const before = a === null ? null : readMaybe(path.join(a.dir, rel));
    const after = readMaybe(path.join(b.dir, rel));
    if (before !== null && after !== null && before.equals(after)) continue;
    const status: FileStatus = before === null ? "added" : after === null ? "removed" : "changed";
    const empty = Buffer.alloc(0);
    const binary = isBinary(before ?? empty) || isBinary(after ?? empty);
    if (binary) {
      changes.push({ path: rel, status, added: 0, removed: 0, binary, hunks: [] });
      continue;
    }
    const edits = diffLines(
      splitLines((before ?? empty).toString("utf8")),
      splitLines((after ?? empty).toString("utf8")),
    );
    changes.push({
      path: rel,
      status,
      added: edits.filter((e) => e.kind === "insert").length,
      removed: edits.filter((e) => e.kind === "delete").length,
      binary,
      hunks: buildHunks(edits),
    });
  }
  return changes;
}

function hunkLine(edit: Edit, color: boolean): string {
  const mark = edit.kind === "insert" ? "+" : edit.kind === "delete" ? "-" : " ";
  const hasNewline = edit.text.endsWith("\n");
  const body = `${mark}${hasNewline ? edit.text.slice(0, -1) : edit.text}`;
  const painted =
    edit.kind === "insert" ? green(color, body) : edit.kind === "delete" ? red(color, body) : body;
  return hasNewline ? `${painted}\n` : `${painted}\n\\ No newline at end of file\n`;
}

/** Unified diff text for one file; `aLabel`/`bLabel` are the chapter ids. */
export function formatFileChange(
  change: FileChange,
  aLabel: string,
  bLabel: string,
  color = false,
): string {
  const from = change.status === "added" ? "/dev/null" : `${aLabel}/${change.path}`;
  const to = change.status === "removed" ? "/dev/null" : `${bLabel}/${change.path}`;
  if (change.binary) return `${bold(color, `Binary files ${from} and ${to} differ`)}\n`;
  let text = `${bold(color, `--- ${from}`)}\n${bold(color, `+++ ${to}`)}\n`;
  for (const hunk of change.hunks) {
    const header = `@@ -${hunk.oldStart},${hunk.oldCount} +${hunk.newStart},${hunk.newCount} @@`;
    text += `${cyan(color, header)}\n`;
    for (const edit of hunk.edits) text += hunkLine(edit, color);
  }
  return text;
}

function summaryLine(changes: readonly FileChange[]): string {
  const added = changes.reduce((sum, c) => sum + c.added, 0);
  const removed = changes.reduce((sum, c) => sum + c.removed, 0);
  const files = `${changes.length} ${changes.length === 1 ? "file" : "files"} changed`;
  return `${files}, +${added} -${removed}`;
}

/** `course diff`: the whole diff text, ending with the summary line. */
export function diffCommand(
  root: string,
  aRef: string,
  bRef: string,
  opts: { all?: boolean; color?: boolean } = {},
): string {
  const chapters = listChapters(root);
  const a = resolveChapter(chapters, aRef);
  const b = resolveChapter(chapters, bRef);
  const changes = compareChapters(a, b, opts.all === true);
  const body = changes.map((c) => formatFileChange(c, a.id, b.id, opts.color === true)).join("");
  return `${body}${summaryLine(changes)}\n`;
}

// ---------------------------------------------------------------------------
// stats

export interface ChapterStats {
  id: string;
  folder: string;
  filesAdded: number;
  filesChanged: number;
  filesRemoved: number;
  linesAdded: number;
  linesRemoved: number;
  /** all code lines of the chapter itself */
  codeLines: number;
}

/** One row per chapter: code changes against the previous chapter (s01 against nothing). */
export function computeStats(root: string): ChapterStats[] {
  const chapters = listChapters(root);
  return chapters.map((chapter, i) => {
    const changes = compareChapters(chapters[i - 1] ?? null, chapter);
    const count = (status: FileStatus) => changes.filter((c) => c.status === status).length;
    const codeLines = listFiles(chapter.dir).reduce((sum, rel) => {
      const buf = fs.readFileSync(path.join(chapter.dir, rel));
      return sum + (isBinary(buf) ? 0 : splitLines(buf.toString("utf8")).length);
    }, 0);
    return {
      id: chapter.id,
      folder: chapter.folder,
      filesAdded: count("added"),
      filesChanged: count("changed"),
      filesRemoved: count("removed"),
      linesAdded: changes.reduce((sum, c) => sum + c.added, 0),
      linesRemoved: changes.reduce((sum, c) => sum + c.removed, 0),
      codeLines,
    };
  });
}

/** A padded Markdown table (text columns left-aligned, numbers right-aligned). */
export function formatStatsTable(rows: readonly ChapterStats[]): string {
  const header = [
    "Chapter",
    "Folder",
    "Files added",
    "Files changed",
    "Files removed",
    "Lines added",
    "Lines removed",
    "Code lines",
  ];
  const body = rows.map((r) => [
    r.id,
    `\`${r.folder}\``,
    String(r.filesAdded),
    String(r.filesChanged),
    String(r.filesRemoved),
    String(r.linesAdded),
    String(r.linesRemoved),
    String(r.codeLines),
  ]);
  const widths = header.map((h, col) =>
    Math.max(h.length, ...body.map((cells) => (cells[col] ?? "").length)),
  );
  const numeric = (col: number) => col >= 2;
  const row = (cells: readonly string[]) =>
    `| ${cells
      .map((cell, col) => {
        const w = widths[col] ?? cell.length;
        return numeric(col) ? cell.padStart(w) : cell.padEnd(w);
      })
      .join(" | ")} |`;
  const rule = `| ${widths
    .map((w, col) => (numeric(col) ? `${"-".repeat(w - 1)}:` : `:${"-".repeat(w - 1)}`))
    .join(" | ")} |`;
  return `${[row(header), rule, ...body.map(row)].join("\n")}\n`;
}

// ---------------------------------------------------------------------------
// sync

export type SyncStatus = "updated" | "up-to-date" | "absent" | "merge";

export interface SyncEntry {
  id: string;
  /** repo-relative path of this chapter's copy, e.g. chapters/s08-x/src/bash.ts */
  file: string;
  status: SyncStatus;
}

export interface SyncResult {
  /** repo-relative path of the edited copy */
  source: string;
  /** where the old version came from: "git HEAD" or the --old path */
  oldFrom: string;
  /** true when the edited copy equals its old version: nothing was walked */
  unchanged: boolean;
  entries: SyncEntry[];
}

export interface SyncOptions {
  /** file holding the old content, instead of `git show HEAD:…` */
  oldPath?: string;
  dryRun?: boolean;
}

/** `<file>` relative to a chapter folder, posix, not escaping it. */
function chapterRelative(file: string, from: Chapter): string {
  let rel = file.replace(/\\/g, "/").replace(/^\.\//, "");
  // Be forgiving: "chapters/s07-x/src/a.ts" or "s07-x/src/a.ts" for the --from chapter.
  for (const prefix of [`chapters/${from.folder}/`, `${from.folder}/`]) {
    if (rel.startsWith(prefix)) rel = rel.slice(prefix.length);
  }
  const normal = path.posix.normalize(rel);
  if (
    normal === "." ||
    normal.startsWith("../") ||
    normal === ".." ||
    path.posix.isAbsolute(normal)
  ) {
    throw new CourseError(
      `sync: "${file}" must be a path inside a chapter folder, e.g. src/bash.ts`,
    );
  }
  return normal;
}

/** The committed version of a repo-relative path, or null when git/HEAD does not have it. */
export function gitHeadVersion(root: string, repoRel: string): Buffer | null {
  try {
    return execFileSync("git", ["-C", root, "show", `HEAD:./${repoRel}`], {
      stdio: ["ignore", "pipe", "ignore"],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    return null;
  }
}

/** `course sync`: push the edit of `<file>` in chapter `from` into later chapters that still hold the old version. */
export function syncFile(
  root: string,
  file: string,
  fromRef: string,
  opts: SyncOptions = {},
): SyncResult {
  const chapters = listChapters(root);
  const from = resolveChapter(chapters, fromRef);
  const rel = chapterRelative(file, from);
  const source = `chapters/${from.folder}/${rel}`;
  const next = readMaybe(path.join(from.dir, rel));
  if (next === null) throw new CourseError(`sync: ${source} does not exist`);

  let old: Buffer | null;
  let oldFrom: string;
  if (opts.oldPath !== undefined) {
    old = readMaybe(path.resolve(opts.oldPath));
    oldFrom = opts.oldPath;
    if (old === null) throw new CourseError(`sync: cannot read --old file ${opts.oldPath}`);
  } else {
    old = gitHeadVersion(root, source);
    oldFrom = "git HEAD";
    if (old === null) {
      throw new CourseError(
        `sync: git has no committed version of ${source} (HEAD:${source}); pass --old <file> with the content before your edit`,
      );
    }
  }
  const result: SyncResult = { source, oldFrom, unchanged: old.equals(next), entries: [] };
  if (result.unchanged) return result;

  for (const chapter of chapters) {
    if (chapter.num <= from.num) continue;
    const target = `chapters/${chapter.folder}/${rel}`;
    const copy = readMaybe(path.join(chapter.dir, rel));
    let status: SyncStatus;
    if (copy === null) status = "absent";
    else if (copy.equals(next)) status = "up-to-date";
    else if (copy.equals(old)) status = "updated";
    else status = "merge";
    if (status === "updated" && opts.dryRun !== true)
      fs.writeFileSync(path.join(chapter.dir, rel), next);
    result.entries.push({ id: chapter.id, file: target, status });
  }
  return result;
}

function formatSync(result: SyncResult, dryRun: boolean, color: boolean): string {
  if (result.unchanged) {
    return `nothing to sync: ${result.source} is the same as its old version (${result.oldFrom})\n`;
  }
  const lines: string[] = [];
  const counts = { updated: 0, "up-to-date": 0, absent: 0, merge: 0 };
  for (const entry of result.entries) {
    counts[entry.status]++;
    if (entry.status === "updated") {
      lines.push(green(color, `${dryRun ? "would update" : "updated"} ${entry.id}: ${entry.file}`));
    } else if (entry.status === "up-to-date") {
      lines.push(`${entry.id}: already up to date`);
    } else if (entry.status === "absent") {
      lines.push(`${entry.id}: absent`);
    } else {
      lines.push(red(color, `${entry.id}: merge by hand: ${entry.file}`));
    }
  }
  const later = result.entries.length === 0 ? " (no later chapters)" : "";
  lines.push(
    `sync ${result.source} (old version from ${result.oldFrom})${later}: ` +
      `${counts.updated} ${dryRun ? "would be updated" : "updated"}, ${counts["up-to-date"]} already up to date, ` +
      `${counts.absent} absent, ${counts.merge} to merge by hand${dryRun ? " — dry run, nothing written" : ""}`,
  );
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------
// check

const FOLDER_NAME = /^s\d\d-[a-z0-9]+(?:-[a-z0-9]+)*$/;

function checkPackage(chapter: Chapter): string[] {
  const where = `chapters/${chapter.folder}/package.json`;
  const raw = readMaybe(path.join(chapter.dir, "package.json"));
  if (raw === null) return [`${where}: missing`];
  let pkg: unknown;
  try {
    pkg = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    return [`${where}: does not parse (${err instanceof Error ? err.message : String(err)})`];
  }
  if (typeof pkg !== "object" || pkg === null || Array.isArray(pkg))
    return [`${where}: not a JSON object`];
  const record = pkg as Record<string, unknown>;
  const problems: string[] = [];
  if (record.name !== chapter.id) {
    problems.push(`${where}: name is ${JSON.stringify(record.name)}, expected "${chapter.id}"`);
  }
  const scripts = record.scripts;
  const scriptMap =
    typeof scripts === "object" && scripts !== null ? (scripts as Record<string, unknown>) : {};
  for (const script of ["start", "demo"]) {
    if (typeof scriptMap[script] !== "string")
      problems.push(`${where}: missing script "${script}"`);
  }
  return problems;
}

function checkDrift(prev: Chapter, chapter: Chapter, next: Chapter): string[] {
  const problems: string[] = [];
  const nextFiles = new Set(listFiles(next.dir));
  for (const rel of listFiles(prev.dir)) {
    if (!nextFiles.has(rel)) continue;
    const before = readMaybe(path.join(prev.dir, rel));
    const after = readMaybe(path.join(next.dir, rel));
    if (before === null || after === null || !before.equals(after)) continue;
    const here = readMaybe(path.join(chapter.dir, rel));
    if (here?.equals(before)) continue;
    const file = `chapters/${chapter.folder}/${rel}`;
    problems.push(
      here === null
        ? `drift: ${file} is missing, but ${prev.id} and ${next.id} have identical copies — restore it (or remove it from later chapters too)`
        : `drift: ${file} differs from both ${prev.id} and ${next.id}, which are identical — carry the fix forward with course sync`,
    );
  }
  return problems;
}

/** From this chapter on, a chapter may only add files and edit the files in SHAPE_FREE. */
export const SHAPE_FROM = 5;
/** The files every chapter rewrites: its wiring, its prompt list and its demo script. */
export const SHAPE_FREE = new Set(["src/main.ts", "src/prompt.ts", "src/demo.ts"]);
/** The table of deliberate edits to an earlier chapter's file: chapter → file → reason. */
export const EDITS_FILE = "chapters/edits.json";

type EditTable = Record<string, Record<string, string>>;

/** Reads chapters/edits.json (absent: no exceptions); a malformed table is a problem. */
export function readEdits(root: string): { edits: EditTable; problems: string[] } {
  const raw = readMaybe(path.join(root, EDITS_FILE));
  if (raw === null) return { edits: {}, problems: [] };
  let value: unknown;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { edits: {}, problems: [`${EDITS_FILE}: invalid JSON (${why})`] };
  }
  const isRecord = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isRecord(value)) {
    return { edits: {}, problems: [`${EDITS_FILE}: must be an object of chapter ids`] };
  }
  const edits: EditTable = {};
  const problems: string[] = [];
  for (const [id, files] of Object.entries(value)) {
    if (id.startsWith("$")) continue; // "$comment" and the like
    if (!isRecord(files)) {
      problems.push(`${EDITS_FILE}: "${id}" must map file paths to reasons`);
      continue;
    }
    edits[id] = {};
    for (const [file, reason] of Object.entries(files)) {
      if (typeof reason !== "string" || reason.trim() === "") {
        problems.push(`${EDITS_FILE}: "${id}" → "${file}" needs a reason (a non-empty string)`);
      } else edits[id][file] = reason;
    }
  }
  return { edits, problems };
}

/**
 * The shape rule: from s05 on, a chapter is the previous one plus its new files; every
 * other code file is the previous chapter's copy, byte for byte, except main.ts, prompt.ts
 * and demo.ts, and except what the edits table lists with a reason.
 */
function checkShape(prev: Chapter, chapter: Chapter, allowed: Record<string, string>): string[] {
  const problems: string[] = [];
  const here = new Set(listFiles(chapter.dir));
  for (const rel of listFiles(prev.dir)) {
    if (SHAPE_FREE.has(rel)) continue;
    const file = `chapters/${chapter.folder}/${rel}`;
    const before = readMaybe(path.join(prev.dir, rel));
    const after = here.has(rel) ? readMaybe(path.join(chapter.dir, rel)) : null;
    const same = before !== null && after !== null && before.equals(after);
    if (allowed[rel] !== undefined) {
      if (same) {
        problems.push(
          `shape: ${EDITS_FILE} lists ${chapter.id} ${rel}, but it is identical to ${prev.id}'s copy — remove the entry`,
        );
      }
      continue;
    }
    if (same) continue;
    problems.push(
      after === null
        ? `shape: ${file} is missing, but ${prev.id} has it — a chapter keeps every earlier file (or list it in ${EDITS_FILE} with a reason)`
        : `shape: ${file} edits ${prev.id}'s copy of an earlier mechanism's file — a chapter adds its own files and changes only main.ts, prompt.ts and demo.ts; carry a fix with course sync, or list the file in ${EDITS_FILE} with a reason`,
    );
  }
  for (const rel of Object.keys(allowed)) {
    if (!fs.existsSync(path.join(prev.dir, rel))) {
      problems.push(
        `shape: ${EDITS_FILE} lists ${chapter.id} ${rel}, which ${prev.id} does not have`,
      );
    }
  }
  return problems;
}

/**
 * The past rule: a chapter's code, comments included, never names a later chapter. A
 * chapter knows only what came before it; what a later one needs, that chapter adds (the
 * contract grows in contract.ts, listed in chapters/edits.json).
 */
function checkPast(chapter: Chapter, chapters: readonly Chapter[]): string[] {
  const later = new Set(chapters.filter((c) => c.num > chapter.num).map((c) => c.id));
  if (later.size === 0) return [];
  const problems: string[] = [];
  for (const rel of listFiles(chapter.dir)) {
    const text = readMaybe(path.join(chapter.dir, rel));
    if (text === null || isBinary(text)) continue;
    text
      .toString("utf8")
      .split("\n")
      .forEach((line, i) => {
        for (const match of line.matchAll(/\bs\d\d\b/g)) {
          if (!later.has(match[0])) continue;
          problems.push(
            `past: chapters/${chapter.folder}/${rel}:${i + 1} names ${match[0]}, a later chapter — a chapter's code knows only its past; what ${match[0]} needs, ${match[0]} adds itself`,
          );
        }
      });
  }
  return problems;
}

/** The mechanism factories main.ts lists, in order (`bashMechanism`, `filesMechanism` …). */
export function mechanismList(mainSource: string): string[] {
  const start = mainSource.indexOf("runHarness(");
  if (start < 0) return [];
  return [...mainSource.slice(start).matchAll(/\b(\w+Mechanism)\(/g)].map((m) => m[1]!);
}

/**
 * The list rule: from s05 on, a chapter's main.ts lists the previous chapter's mechanisms in
 * the same order, then its own. With the shape rule this makes a chapter's composition the
 * previous one's plus its mechanism, which is why a suite that runs through `main` is carried
 * only to the chapters whose modules differ and to the newest (tests/chapters.ts, `carried`).
 */
function checkList(prev: Chapter, chapter: Chapter): string[] {
  const before = mechanismList(readMaybe(path.join(prev.dir, "src/main.ts"))?.toString() ?? "");
  const after = mechanismList(readMaybe(path.join(chapter.dir, "src/main.ts"))?.toString() ?? "");
  if (before.length === 0 && after.length === 0) return [];
  const kept = before.every((name, i) => after[i] === name);
  if (kept && after.length > before.length) return [];
  return [
    `list: chapters/${chapter.folder}/src/main.ts lists ${after.join(", ") || "no mechanisms"}; ` +
      `it must list ${prev.id}'s ${before.join(", ")} in that order, then its own`,
  ];
}

/** A code line that stands for lines left out of an excerpt. */
const ELISION = /^\s*(?:\/\/|#)\s*(?:…|\.\.\.)\s*$/;

/**
 * README excerpts: a fenced block whose info string names a file of the chapter
 * (```ts src/loop.ts```) must be that file's text, verbatim; a line holding only `// …`
 * marks lines left out, and the pieces between such lines must appear in order.
 */
function checkExcerpts(chapter: Chapter, readme: string): string[] {
  const text = readMaybe(path.join(chapter.dir, readme));
  if (text === null) return [];
  const problems: string[] = [];
  // An indented fence (inside a list item) counts too; its indentation is not part of the code.
  const fence = /^([ \t]*)```[\w-]*[ \t]+(\S+)[ \t]*\n([\s\S]*?)^\1```[ \t]*$/gm;
  const where = `chapters/${chapter.folder}/${readme}`;
  for (const match of text.toString("utf8").matchAll(fence)) {
    const indent = match[1] ?? "";
    const rel = match[2] ?? "";
    if (!/^src\/[\w./-]+\.ts$/.test(rel)) continue;
    const source = readMaybe(path.join(chapter.dir, rel));
    const line = text.toString("utf8").slice(0, match.index).split("\n").length;
    if (source === null) {
      problems.push(`excerpt: ${where}:${line} quotes ${rel}, which the chapter does not have`);
      continue;
    }
    const lines = source.toString("utf8").split("\n");
    const pieces: string[][] = [[]];
    for (const indented of (match[3] ?? "").replace(/\n$/, "").split("\n")) {
      const row = indented.startsWith(indent) ? indented.slice(indent.length) : indented;
      if (ELISION.test(row)) pieces.push([]);
      else pieces.at(-1)?.push(row);
    }
    let from = 0;
    for (const piece of pieces.filter((p) => p.length > 0)) {
      const at = findLines(lines, piece, from);
      if (at === -1) {
        problems.push(
          `excerpt: ${where}:${line} is not verbatim ${rel} (from "${piece[0]?.trim()}") — copy it again from the code`,
        );
        break;
      }
      from = at + piece.length;
    }
  }
  return problems;
}

/** The words each README's navigation line puts before its previous and next links. */
const NAV_LABELS: Record<Lang, { previous: string; next: string }> = {
  en: { previous: "previous:", next: "next:" },
  ja: { previous: "前へ:", next: "次へ:" },
  zh: { previous: "上一章:", next: "下一章:" },
};

/**
 * A chapter README's links: its navigation line (the first lines, above the title's text)
 * links the same README in the other languages and the previous and the next chapter's
 * README in its own language; every relative link in it names a file that exists, and
 * stays in its language (see `pageLinks`).
 */
function checkLinks(root: string, chapter: Chapter, lang: Lang, prev?: Chapter, next?: Chapter) {
  const readme = LANGUAGE[lang].readme;
  const text = readMaybe(path.join(chapter.dir, readme));
  const labels = NAV_LABELS[lang];
  if (text === null) return [];
  const where = `chapters/${chapter.folder}/${readme}`;
  const body = text.toString("utf8");
  const nav = body.split("\n").slice(0, 5).join("\n");
  const problems: string[] = [...languageLine(where, nav, LANGS)];
  for (const [label, other] of [
    [labels.previous, prev],
    [labels.next, next],
  ] as const) {
    if (other === undefined) continue;
    const target = `../${other.folder}/${readme}`;
    const link = new RegExp(`${label} \\[[^\\]]+\\]\\(${target.replace(/[.]/g, "\\.")}\\)`);
    if (!link.test(nav)) {
      problems.push(
        `link: ${where} has no "${label} [${other.id} …](${target})" in its first lines`,
      );
    }
  }
  problems.push(...pageLinks(root, where, body));
  return problems;
}

/**
 * A page's language line (its first lines) links the page in the other `langs`:
 * `[English](README.md) · [中文](README.zh.md)` in a Japanese README.
 */
function languageLine(where: string, nav: string, langs: readonly Lang[]): string[] {
  const page = path.posix.basename(where);
  const own = langOf(page);
  const missing = langs
    .filter((lang) => lang !== own)
    .map((lang) => `[${LANGUAGE[lang].name}](${inLanguage(page, lang)})`)
    .filter((link) => !nav.includes(link));
  return missing.length === 0
    ? []
    : [`link: ${where} has no language line: its first lines must link ${missing.join(" · ")}`];
}

/**
 * Every relative link of a Markdown page (`where`, relative to the root) names a file that
 * exists, and a link to a page in another language is a problem when the page exists in
 * the linking page's own language (a Chinese README links README.zh.md, not README.md). The
 * page's own versions in the other languages are its language line, not a slip.
 */
export function pageLinks(root: string, where: string, body: string): string[] {
  const problems: string[] = [];
  const own = langOf(where);
  const dir = path.join(root, path.dirname(where));
  // Links in code (fenced blocks, inline spans) are examples, not links; blank them out
  // so line numbers stay right.
  const prose = body.replace(/^```[\s\S]*?^```/gm, (code) => code.replace(/[^\n]/g, " "));
  const plain = prose.replace(/`[^`\n]*`/g, (code) => " ".repeat(code.length));
  for (const match of plain.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = (match[1] ?? "").replace(/#.*$/, "");
    if (target === "" || /^[a-z]+:/i.test(target)) continue;
    const line = body.slice(0, match.index).split("\n").length;
    const file = path.resolve(dir, target);
    if (!fs.existsSync(file)) {
      problems.push(`link: ${where}:${line} links ${target}, which does not exist`);
      continue;
    }
    if (!target.endsWith(".md") || langOf(target) === own) continue;
    const rel = path.relative(root, file).split(path.sep).join("/");
    const mine = inLanguage(rel, own);
    if (mine !== where && fs.existsSync(path.join(root, mine))) {
      const wanted = inLanguage(target, own);
      problems.push(
        `link: ${where}:${line} links ${target}, a page in ${LANGUAGE[langOf(target)].name}; link ${wanted}, the page in ${LANGUAGE[own].name}`,
      );
    }
  }
  return problems;
}

/**
 * The Markdown pages outside the chapters: the top READMEs, docs/ and the exercises'
 * statements, relative to the root.
 */
function coursePages(root: string): string[] {
  const list = (dir: string, name: RegExp) =>
    fs.existsSync(path.join(root, dir))
      ? fs
          .readdirSync(path.join(root, dir))
          .filter((file) => name.test(file))
          .sort()
          .map((file) => (dir ? `${dir}/${file}` : file))
      : [];
  const exercises = fs.existsSync(path.join(root, "exercises"))
    ? fs
        .readdirSync(path.join(root, "exercises"))
        .filter((name) => /^s\d\d\.\d+-/.test(name))
        .sort()
        .flatMap((name) => list(`exercises/${name}`, /^README(\.\w\w)?\.md$/))
    : [];
  return [...list("", /^README(\.\w\w)?\.md$/), ...list("docs", /\.md$/), ...exercises];
}

/** The index where `piece` starts as consecutive lines of `lines` at or after `from`, or -1. */
function findLines(lines: string[], piece: string[], from: number): number {
  for (let i = from; i + piece.length <= lines.length; i++) {
    if (piece.every((row, k) => lines[i + k] === row)) return i;
  }
  return -1;
}

/** `course check`: one line per problem; empty when the course is consistent. */
export function checkCourse(root: string): string[] {
  const problems: string[] = [];
  const base = path.join(root, "chapters");
  const chapters = listChapters(root);
  for (const entry of fs.readdirSync(base, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || SKIP_DIRS.has(entry.name)) continue;
    if (!FOLDER_NAME.test(entry.name)) {
      problems.push(
        `chapters/${entry.name}: folder name must be sNN-name (lowercase words joined by "-")`,
      );
    }
  }
  if (chapters.length === 0) problems.push("chapters/: no chapter folders (sNN-name)");
  chapters.forEach((chapter, i) => {
    const expected = i + 1;
    if (chapter.num !== expected) {
      const want = `s${String(expected).padStart(2, "0")}`;
      const after = i === 0 ? "as the first chapter" : `after ${chapters[i - 1]?.folder}`;
      problems.push(
        `chapters/${chapter.folder}: numbering must run from s01 without gaps — expected ${want} ${after}`,
      );
    }
  });
  for (const chapter of chapters) {
    const at = (rel: string) => `chapters/${chapter.folder}/${rel}`;
    problems.push(...checkPackage(chapter));
    for (const readme of LANGS.map((lang) => LANGUAGE[lang].readme)) {
      const text = readMaybe(path.join(chapter.dir, readme));
      if (text === null) problems.push(`${at(readme)}: missing`);
      else if (text.toString("utf8").trim() === "") problems.push(`${at(readme)}: empty`);
    }
    for (const src of ["src/main.ts", "src/demo.ts"]) {
      if (!fs.existsSync(path.join(chapter.dir, src))) problems.push(`${at(src)}: missing`);
    }
    problems.push(...checkPast(chapter, chapters));
    const i = chapters.indexOf(chapter);
    for (const lang of LANGS) {
      problems.push(...checkExcerpts(chapter, LANGUAGE[lang].readme));
      problems.push(...checkLinks(root, chapter, lang, chapters[i - 1], chapters[i + 1]));
    }
  }
  for (const rel of coursePages(root)) {
    const body = readMaybe(path.join(root, rel))?.toString("utf8") ?? "";
    const nav = body.split("\n").slice(0, 5).join("\n");
    // The glossaries are one per language, not translations of one another.
    const versions = LANGS.filter((lang) => fs.existsSync(path.join(root, inLanguage(rel, lang))));
    if (!rel.startsWith("docs/glossary.")) problems.push(...languageLine(rel, nav, versions));
    problems.push(...pageLinks(root, rel, body));
  }
  const { edits, problems: tableProblems } = readEdits(root);
  problems.push(...tableProblems);
  for (const id of Object.keys(edits)) {
    const chapter = chapters.find((c) => c.id === id);
    if (chapter === undefined || chapter.num < SHAPE_FROM) {
      problems.push(`${EDITS_FILE}: "${id}" is not a chapter from s0${SHAPE_FROM} on`);
    }
  }
  for (let i = 1; i < chapters.length; i++) {
    const prev = chapters[i - 1];
    const chapter = chapters[i];
    if (prev === undefined || chapter === undefined || chapter.num < SHAPE_FROM) continue;
    problems.push(...checkShape(prev, chapter, edits[chapter.id] ?? {}));
    problems.push(...checkList(prev, chapter));
  }
  for (let i = 1; i + 1 < chapters.length; i++) {
    const prev = chapters[i - 1];
    const chapter = chapters[i];
    const next = chapters[i + 1];
    if (prev !== undefined && chapter !== undefined && next !== undefined) {
      problems.push(...checkDrift(prev, chapter, next));
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------
// log

/** `course log`: the requests of a session log, rebuilt (see shared/src/log.ts). */
export function logCommand(file: string, request?: string): string {
  const text = readMaybe(path.resolve(file));
  if (text === null) throw new CourseError(`log: cannot read ${file}`);
  let requests: ReturnType<typeof readRequests>;
  try {
    requests = readRequests(text.toString("utf8"));
  } catch (err) {
    throw new CourseError(`log: ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (request === undefined) {
    const lines = requests.map((r, i) => {
      const size = Buffer.byteLength(JSON.stringify(r.params));
      return `${i + 1}\t${r.ts}\t${r.scope}\t${r.params.messages.length} messages\t${size} bytes`;
    });
    return `${lines.join("\n")}${lines.length > 0 ? "\n" : ""}`;
  }
  const n = Number(request);
  const found = Number.isInteger(n) ? requests[n - 1] : undefined;
  if (found === undefined) {
    throw new CourseError(`log: --request must be 1 to ${requests.length} (got "${request}")`);
  }
  return `${JSON.stringify(found.params, null, 2)}\n`;
}

// ---------------------------------------------------------------------------
// CLI

export const USAGE = `Usage: pnpm course <command> [options]

Commands:
  diff <a> <b> [--all]    unified diff of chapter a → chapter b (code only;
                          --all adds READMEs, package.json, tsconfig.json)
  stats                   Markdown table: what each chapter adds to the previous one
  sync <file> --from <sNN> [--old <path>] [--dry-run]
                          carry an edit of <file> (relative to the chapter folder,
                          e.g. src/bash.ts) made in sNN forward to later chapters
                          that still hold the old version (old = git HEAD, or --old)
  check [--no-demos]      verify chapter layout, package.json, READMEs, drift, the
                          shape of each chapter (chapters/edits.json), README excerpts
                          and README links (previous/next chapter, relative files), the
                          README rules (scripts/readme-check.ts) and each "Run it"
                          transcript against the demo it shows (--no-demos skips those)
  log <api.jsonl> [--request <n>]
                          rebuild the requests a session log recorded: one line each,
                          or request n (1-based) in full as JSON
  site [--out <dir>] [--serve] [--port <n>]
                          build the course as a static site into <dir> (default: site/):
                          timeline, a page per chapter (README en/ja, files, diff,
                          diagram, its demo request by request) and per chapter pair;
                          --serve previews it on http://127.0.0.1:<n>/ (default 4173)
  exercise list           the exercises: id (s02.1), chapter, title
  exercise start <id> [--dir <dir>]
                          copy the exercise's chapter to <dir> (default:
                          exercises/work/<id>, which git ignores) with its statement
  exercise check <id> [--dir <dir>] [--solution]
                          run the exercise's checks against your copy (or, with
                          --solution, the reference solution): what passed, what
                          failed, and a hint for the first failure
  exercise diff <id> [--dir <dir>]
                          your change to the chapter, then the reference solution's
  exercise verify-all     for every exercise: the untouched start and the start with an
                          unrelated edit fail the check, the solution passes it

A chapter is its id (s07), its folder name (s07-skills) or its number (7).
Options: --root <dir>  repo root (default: this repository)   -h, --help  this text
`;

const OPTIONS = {
  root: { type: "string" },
  all: { type: "boolean" },
  from: { type: "string" },
  old: { type: "string" },
  "dry-run": { type: "boolean" },
  request: { type: "string" },
  out: { type: "string" },
  serve: { type: "boolean" },
  port: { type: "string" },
  "no-demos": { type: "boolean" },
  dir: { type: "string" },
  solution: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const ALLOWED: Record<string, readonly string[]> = {
  diff: ["root", "all"],
  stats: ["root"],
  sync: ["root", "from", "old", "dry-run"],
  check: ["root", "no-demos"],
  log: ["request"],
  site: ["root", "out", "serve", "port"],
  exercise: ["root", "dir", "solution"],
};

const ARITY: Record<string, number> = { diff: 2, stats: 0, sync: 1, check: 0, log: 1, site: 0 };
/** `exercise`'s own commands and how many arguments each takes after its name. */
const EXERCISE_ARITY: Record<string, number> = {
  list: 0,
  start: 1,
  check: 1,
  diff: 1,
  "verify-all": 0,
};

const parse = (argv: readonly string[]) =>
  parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });

/** Run the CLI; returns the exit code (`site` returns it once the build is done). */
export function main(argv: readonly string[], io: Io = processIo()): number | Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.error(`course: ${err instanceof Error ? err.message : String(err)}\n`);
    io.error("Run `pnpm course --help` for usage.\n");
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...args] = positionals;
  if (values.help === true || command === undefined) {
    io.write(USAGE);
    return 0;
  }
  const allowed = ALLOWED[command];
  if (allowed === undefined) {
    io.error(`course: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && !allowed.includes(name)) {
      io.error(`course ${command}: option --${name} does not apply here\n`);
      return 2;
    }
  }
  if (command === "exercise") return exerciseCommand(args, values, io);
  if (args.length !== ARITY[command]) {
    const usage = USAGE.split("\n").find(
      (line) => line.trimStart().startsWith(`${command} `) || line.trim() === command,
    );
    io.error(
      `course ${command}: expected ${ARITY[command]} argument(s), got ${args.length}\n  ${usage?.trim() ?? ""}\n`,
    );
    return 2;
  }
  const root = path.resolve(values.root ?? DEFAULT_ROOT);
  try {
    switch (command) {
      case "diff":
        io.write(
          diffCommand(root, args[0] ?? "", args[1] ?? "", {
            all: values.all === true,
            color: io.color,
          }),
        );
        return 0;
      case "stats":
        io.write(formatStatsTable(computeStats(root)));
        return 0;
      case "sync": {
        if (values.from === undefined) {
          io.error("course sync: --from <sNN> is required (the chapter holding the edited copy)\n");
          return 2;
        }
        const dryRun = values["dry-run"] === true;
        const result = syncFile(root, args[0] ?? "", values.from, {
          dryRun,
          ...(values.old !== undefined ? { oldPath: values.old } : {}),
        });
        io.write(formatSync(result, dryRun, io.color));
        return result.entries.some((e) => e.status === "merge") ? 1 : 0;
      }
      case "log":
        io.write(logCommand(args[0] ?? "", values.request));
        return 0;
      case "site":
        return siteCommand(root, values, io);
      default:
        return checkCommand(root, values["no-demos"] === true, io);
    }
  } catch (err) {
    if (err instanceof CourseError) {
      io.error(`course ${command}: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

/** `course exercise <list|start|check|diff|verify-all>` (scripts/exercise.ts). */
async function exerciseCommand(
  args: string[],
  values: { root?: string; dir?: string; solution?: boolean },
  io: Io,
): Promise<number> {
  const [sub, ...rest] = args;
  const arity = sub === undefined ? undefined : EXERCISE_ARITY[sub];
  if (arity === undefined || rest.length !== arity) {
    const usage = USAGE.split("\n").filter((line) => line.trimStart().startsWith("exercise "));
    io.error(
      `course exercise: ${sub === undefined ? "which command?" : arity === undefined ? `unknown command "${sub}"` : `${sub} takes ${arity} argument(s), got ${rest.length}`}\n${usage.map((line) => `  ${line.trim()}`).join("\n")}\n`,
    );
    return 2;
  }
  if (values.solution === true && (sub !== "check" || values.dir !== undefined)) {
    io.error("course exercise: --solution applies only to check, without --dir\n");
    return 2;
  }
  if (values.dir !== undefined && !["start", "check", "diff"].includes(sub!)) {
    io.error(`course exercise ${sub}: --dir does not apply here\n`);
    return 2;
  }
  const root = path.resolve(values.root ?? DEFAULT_ROOT);
  const exercises = await import("./exercise.ts");
  const id = rest[0] ?? "";
  try {
    switch (sub) {
      case "list":
        io.write(exercises.formatList(root));
        return 0;
      case "start":
        return exercises.startExercise(root, id, values.dir, io);
      case "check":
        return await exercises.checkExercise(
          root,
          id,
          { dir: values.dir, solution: values.solution === true },
          io,
        );
      case "diff":
        return exercises.diffExercise(root, id, values.dir, io);
      default:
        return await exercises.verifyAll(root, io);
    }
  } catch (err) {
    if (err instanceof CourseError) {
      io.error(`course exercise ${sub}: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

/**
 * `course check`: the course's own rules, the README rules, and (unless `noDemos`) every
 * chapter's "Run it" transcript against its demo; one line per problem.
 */
async function checkCommand(root: string, noDemos: boolean, io: Io): Promise<number> {
  const { checkExercises } = await import("./exercise.ts");
  const problems = [...checkCourse(root), ...checkReadmes(root), ...checkExercises(root)];
  if (!noDemos) problems.push(...(await checkTranscripts(root)));
  const count = listChapters(root).length;
  for (const problem of problems) io.write(`${red(io.color, problem)}\n`);
  if (problems.length === 0) {
    io.write(`course check: ${count} chapters OK\n`);
    return 0;
  }
  const noun = problems.length === 1 ? "problem" : "problems";
  io.write(`course check: ${problems.length} ${noun} in ${count} chapters\n`);
  return 1;
}

/** `course site`: build, then (with --serve) keep serving until the process is stopped. */
export async function siteCommand(
  root: string,
  values: { out?: string; serve?: boolean; port?: string },
  io: Io,
): Promise<number> {
  const port = Number(values.port ?? "4173");
  if (!/^\d+$/.test(values.port ?? "4173") || port < 1 || port > 65535) {
    io.error(`course site: --port must be a number from 1 to 65535 (got "${values.port}")\n`);
    return 2;
  }
  if (values.port !== undefined && values.serve !== true) {
    io.error("course site: --port applies only with --serve\n");
    return 2;
  }
  const { buildSite, serveSite } = await import("./site.ts");
  const out = path.resolve(values.out ?? path.join(root, "site"));
  let server: Awaited<ReturnType<typeof serveSite>> | undefined;
  try {
    // The port first, so a busy one fails before the build; files are read per request.
    if (values.serve === true) server = await serveSite(out, port);
    await buildSite({ root, out, say: (line) => io.write(`${line}\n`) });
    io.write(`Open ${path.join(out, "index.html")} in a browser (no server needed).\n`);
    if (server) io.write(`Serving ${out} at ${server.url} (Ctrl-C stops it)\n`);
    return 0;
  } catch (err) {
    await server?.close();
    if (err instanceof CourseError) {
      io.error(`course site: ${err.message}\n`);
      return err.exitCode;
    }
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
      io.error(`course site: port ${port} is in use on 127.0.0.1; choose another with --port\n`);
      return 1;
    }
    throw err;
  }
}

function isEntry(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(path.resolve(script)) === real(fileURLToPath(import.meta.url));
}

if (isEntry()) {
  void Promise.resolve(main(process.argv.slice(2))).then((code) => {
    process.exitCode = code;
  });
}
