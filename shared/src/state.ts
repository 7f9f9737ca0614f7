/**
 * Helpers for the harness's own state under `<WORKDIR>/.harness/`.
 * Mechanisms use these instead of their own file code: the folder is created lazily with a
 * `.gitignore` of `*`, whole files are replaced atomically, journals grow one complete line
 * per write, and a corrupt file is reported with its path and never overwritten.
 */
import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";

export const HARNESS_DIR = ".harness";

/** `<workdir>/.harness`, created (with its `.gitignore`) on first use. */
export function harnessDir(workdir: string): string {
  const dir = path.join(workdir, HARNESS_DIR);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  const ignore = path.join(dir, ".gitignore");
  if (!existsSync(ignore)) writeFileSync(ignore, "*\n");
  return dir;
}

/** A path under `.harness/`, with its parent folders created. */
export function harnessPath(workdir: string, ...parts: string[]): string {
  const file = path.join(harnessDir(workdir), ...parts);
  mkdirSync(path.dirname(file), { recursive: true });
  return file;
}

/** Replaces `file` in one step: readers see the old content or the new, never half. */
export function writeFileAtomic(file: string, data: string): void {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    writeFileSync(temp, data);
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Appends one complete line (the text must not contain a newline). */
export function appendLine(file: string, line: string): void {
  if (line.includes("\n")) throw new Error(`appendLine: line for ${file} contains a newline`);
  appendFileSync(file, `${line}\n`);
}

export type StateRead<T> =
  | { status: "ok"; value: T }
  | { status: "missing" }
  | { status: "corrupt"; error: string };

/**
 * Reads a JSON state file. `check` validates the parsed value and returns an error text
 * for a wrong shape. A corrupt file's error names the path; the file is left untouched.
 */
export function readJsonState<T>(
  file: string,
  check: (value: unknown) => string | null = () => null,
): StateRead<T> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (isMissing(error)) return { status: "missing" };
    return { status: "corrupt", error: `${file}: ${(error as Error).message}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { status: "corrupt", error: `${file}: invalid JSON (${(error as Error).message})` };
  }
  const problem = check(value);
  if (problem) return { status: "corrupt", error: `${file}: ${problem}` };
  return { status: "ok", value: value as T };
}

export interface JournalRead {
  records: unknown[];
  /** Lines that are not JSON, with their 1-based numbers (a torn last line is not counted). */
  badLines: number[];
  /** The last line was incomplete (a write was cut short); it is ignored. */
  tornTail: boolean;
}

/** Reads a JSON-lines journal, tolerating a torn last line. */
export function readJournal(file: string): JournalRead {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (isMissing(error)) return { records: [], badLines: [], tornTail: false };
    throw error;
  }
  const lines = text.split("\n");
  const tail = lines.pop() ?? "";
  const result: JournalRead = { records: [], badLines: [], tornTail: tail.trim() !== "" };
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    try {
      result.records.push(JSON.parse(line));
    } catch {
      result.badLines.push(index + 1);
    }
  });
  return result;
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "ENOENT";
}
