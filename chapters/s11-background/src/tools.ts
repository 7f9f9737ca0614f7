/**
 * The file tools.
 *
 * With only `bash`, the model has to turn "read this file" or "change this line" into
 * `cat`, `sed` and `echo >` incantations that break on quoting. Here it gets four tools
 * built for the job. Adding a file tool is one more entry in `FILE_TOOLS`: the loop already
 * dispatches by name through an own-key map, so it does not change. Each tool is one
 * `defineTool` declaration: its `input_schema` is what the model reads, what the loop checks
 * a call's input against, and where the type of `run`'s input comes from.
 *
 * Paths are relative to WORKDIR. The tools do not check confinement themselves: each says
 * which path a call reads or writes (`target`), and the check before every call (a
 * `beforeToolCall` seam) judges paths that leave the workspace. Only `glob` keeps
 * its own filter, because it must never *list* outside paths.
 */
import type { Dirent, Stats } from "node:fs";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { defineTool, onFirstUse, type ToolDefinition, type ToolOutput } from "shared";
import type { Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { isInside, realPathOf, resolveInWorkspace } from "./paths.ts";

/** The glob matcher, loaded on the first `glob` call. */
const picomatch = onFirstUse<typeof import("picomatch")>(import.meta.url, "picomatch");

/** `glob` prints at most this many paths, then says how many it left out. */
export const MAX_GLOB_MATCHES = 1000;

/** A failure of the file system, as a result the model can act on. */
function failure(error: unknown): ToolOutput {
  const message = error instanceof Error ? error.message : String(error);
  return { content: `Error: ${message}`, isError: true };
}

// ---------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------

/** Python's `str.splitlines` line breaks: `\r\n` first, then every single-character break. */
const LINE_BREAK = /\r\n|[\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029]/;

/** Lines as Python's `splitlines` gives them: no break characters, no empty last line. */
export function splitLines(text: string): string[] {
  const lines = text.split(LINE_BREAK);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** The page of `text` the model asked for, with a note of what was left out. */
export function formatLines(text: string, offset: number, limit: number): string {
  const lines = splitLines(text);
  if (offset > 0 && offset >= lines.length) return `(file has ${lines.length} lines)`;
  const rest = lines.slice(offset);
  if (limit <= 0 || limit >= rest.length) return rest.join("\n");
  const shown = rest.slice(0, limit);
  return `${shown.join("\n")}\n... (${rest.length - limit} more lines)`;
}

export const readFileTool = defineTool({
  name: "read_file",
  aliases: ["Read"],
  description:
    "Read file contents. Optional offset (first line, 0-based) and limit (number of lines) page through large files.",
  input_schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      offset: {
        type: "integer",
        minimum: 0,
        description: "First line to return, 0-based (default 0).",
      },
      limit: { type: "integer", description: "Most lines to return (default: to the end)." },
    },
    required: ["path"],
  },
  async run(input, context) {
    try {
      const bytes = await readFile(resolveInWorkspace(context.workdir, input.path));
      // Invalid UTF-8 becomes U+FFFD instead of an error.
      const text = bytes.toString("utf8");
      return { content: formatLines(text, input.offset ?? 0, input.limit ?? 0) };
    } catch (error) {
      return failure(error);
    }
  },
  target: (input) => ({ kind: "read", path: input.path }),
  claudeCode: {
    name: "Read",
    // Claude Code's Read counts lines from 1.
    input: (input, workdir) => ({
      file_path: path.resolve(workdir, input.path),
      ...(input.offset === undefined ? {} : { offset: input.offset + 1 }),
      ...(input.limit === undefined ? {} : { limit: input.limit }),
    }),
    from: ({ file_path, offset, limit }) => ({
      path: file_path,
      ...(typeof offset === "number" ? { offset: offset - 1 } : {}),
      ...(limit === undefined ? {} : { limit }),
    }),
  },
});

// ---------------------------------------------------------------------------------------
// write_file
// ---------------------------------------------------------------------------------------

export const writeFileTool = defineTool({
  name: "write_file",
  aliases: ["Write"],
  description:
    "Write content to a file. Replaces the file if it exists; creates missing parent folders.",
  input_schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      content: { type: "string", description: "The whole new content of the file." },
    },
    required: ["path", "content"],
  },
  async run(input, context) {
    try {
      const target = resolveInWorkspace(context.workdir, input.path);
      await mkdir(path.dirname(target), { recursive: true });
      const bytes = Buffer.from(input.content, "utf8");
      await writeFile(target, bytes);
      return { content: `Wrote ${bytes.length} bytes to ${input.path}` };
    } catch (error) {
      return failure(error);
    }
  },
  target: (input) => ({ kind: "write", path: input.path }),
  claudeCode: {
    name: "Write",
    input: (input, workdir) => ({
      file_path: path.resolve(workdir, input.path),
      content: input.content,
    }),
    from: ({ file_path, content }) => ({ path: file_path, content }),
  },
});

// ---------------------------------------------------------------------------------------
// edit_file
// ---------------------------------------------------------------------------------------

/**
 * The file with the first occurrence of `oldText` replaced, or null when it is absent.
 * Works on bytes, by index and slice: nothing in `newText` is a pattern (`$&` stays `$&`),
 * and every byte outside the replaced span (CRLF, even invalid UTF-8) is kept as it was.
 * An empty `oldText` is found at position 0, so `newText` is prepended.
 */
export function replaceFirst(file: Buffer, oldText: string, newText: string): Buffer | null {
  const needle = Buffer.from(oldText, "utf8");
  const at = file.indexOf(needle);
  if (at === -1) return null;
  return Buffer.concat([
    file.subarray(0, at),
    Buffer.from(newText, "utf8"),
    file.subarray(at + needle.length),
  ]);
}

export const editFileTool = defineTool({
  name: "edit_file",
  aliases: ["Edit"],
  description:
    "Replace exact text in a file once: the first occurrence of old_text becomes new_text.",
  input_schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      old_text: { type: "string", description: "The exact text to replace." },
      new_text: { type: "string", description: "The text to put in its place." },
    },
    required: ["path", "old_text", "new_text"],
  },
  async run(input, context) {
    try {
      const target = resolveInWorkspace(context.workdir, input.path);
      const edited = replaceFirst(await readFile(target), input.old_text, input.new_text);
      if (edited === null) {
        return { content: `Error: text not found in ${input.path}`, isError: true };
      }
      await writeFile(target, edited);
      return { content: `Edited ${input.path}` };
    } catch (error) {
      return failure(error);
    }
  },
  target: (input) => ({ kind: "write", path: input.path }),
  claudeCode: {
    name: "Edit",
    input: (input, workdir) => ({
      file_path: path.resolve(workdir, input.path),
      old_string: input.old_text,
      new_string: input.new_text,
    }),
    from: ({ file_path, old_string, new_string }) => ({
      path: file_path,
      old_text: old_string,
      new_text: new_string,
    }),
  },
});

// ---------------------------------------------------------------------------------------
// glob
// ---------------------------------------------------------------------------------------

/**
 * True when a pattern could name a dot-entry: a `.` opening a segment or an alternative
 * (`.env`, `src/.cache`, `{.a,b}`). Otherwise the walk skips dot-entries entirely, since
 * `*` and `**` would not match them anyway (picomatch's default, `dot: false`).
 */
function namesDotEntries(pattern: string): boolean {
  return /(?:^|[/{,(|])\./.test(pattern);
}

/** Byte order of UTF-8 is code-point order (plain `<` compares UTF-16 units). */
function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * Workspace-relative paths of the files under `start` (itself relative; "" is the
 * workspace). Directory symlinks are not followed; symlinks to files are listed, and the
 * caller drops those whose real path leaves the workspace.
 */
async function walkFiles(workdir: string, start: string, withDots: boolean): Promise<string[]> {
  const files: string[] = [];
  let info: Stats;
  try {
    info = await stat(path.join(workdir, start));
  } catch {
    return files;
  }
  if (info.isFile()) return [start];
  if (!info.isDirectory()) return files;

  const pending = [start];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(workdir, dir), { withFileTypes: true });
    } catch {
      continue; // unreadable folder: nothing to list from it
    }
    for (const entry of entries) {
      if (!withDots && entry.name.startsWith(".")) continue;
      const relative = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) pending.push(relative);
      else if (entry.isFile()) files.push(relative);
      else if (entry.isSymbolicLink() && (await linksToFile(path.join(workdir, relative)))) {
        files.push(relative);
      }
    }
  }
  return files;
}

async function linksToFile(link: string): Promise<boolean> {
  try {
    return (await stat(link)).isFile();
  } catch {
    return false; // dangling
  }
}

/**
 * The pattern relative to the workspace, or null when it points outside it. `..` and
 * absolute patterns are normalised as paths; glob characters pass through untouched.
 */
function workspacePattern(workdir: string, pattern: string): string | null {
  const absolute = path.resolve(workdir, pattern);
  for (const root of new Set([path.resolve(workdir), realPathOf(workdir)])) {
    if (absolute === root) return "";
    const prefix = root.endsWith(path.sep) ? root : root + path.sep;
    if (absolute.startsWith(prefix)) return absolute.slice(prefix.length);
  }
  return null;
}

/** The matching files as `glob` prints them (at most MAX_GLOB_MATCHES, then a count). */
export async function globFiles(workdir: string, pattern: string): Promise<string> {
  const relative = workspacePattern(workdir, pattern);
  if (!relative) return "(no matches)";
  const isMatch = picomatch()(relative, { dot: false });
  // Walk only below the pattern's fixed prefix (`src` for `src/**/*.ts`), unless that
  // prefix holds escapes and is not a plain path.
  const base = picomatch().scan(relative).base;
  const start = base.includes("\\") ? "" : base;
  const realRoot = realPathOf(workdir);
  if (start && !isInside(path.join(workdir, start), realRoot)) return "(no matches)";

  const candidates = await walkFiles(workdir, start, namesDotEntries(relative));
  const matches = candidates
    .filter((file) => isMatch(file))
    .filter((file) => isInside(path.join(workdir, file), realRoot))
    .sort(byCodePoint);
  if (matches.length === 0) return "(no matches)";
  const shown = matches.slice(0, MAX_GLOB_MATCHES);
  const more = matches.length - shown.length;
  return more > 0 ? `${shown.join("\n")}\n... (${more} more matches)` : shown.join("\n");
}

export const globTool = defineTool({
  name: "glob",
  aliases: ["Glob"],
  description:
    "Find files matching a glob pattern (`**` matches any depth). Returns workspace-relative paths, sorted.",
  input_schema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "Glob pattern, e.g. src/**/*.ts" },
    },
    required: ["pattern"],
  },
  async run(input, context) {
    try {
      return { content: await globFiles(context.workdir, input.pattern) };
    } catch (error) {
      return failure(error);
    }
  },
  // It reads the workspace, though no one path of it.
  target: () => ({ kind: "read" }),
  claudeCode: {
    name: "Glob",
    input: (input, workdir) => ({ pattern: input.pattern, path: workdir }),
    // The course's glob searches the workspace only.
    from: ({ pattern }) => ({ pattern }),
  },
});

// ---------------------------------------------------------------------------------------
// The mechanism: the four tools for every agent, and the prompt section.
// ---------------------------------------------------------------------------------------

/** The file tools, in the order the model is offered them. */
export const FILE_TOOLS: ToolDefinition[] = [readFileTool, writeFileTool, editFileTool, globTool];

/** This mechanism's part of the system prompt. */
export function filesSection(workdir: string) {
  return {
    id: "files",
    text: `Files: use read_file, write_file, edit_file and glob for file work instead of shell commands; paths are relative to ${workdir}.`,
  };
}

/** The file tools as a mechanism: the four tools for every agent, and the Files section. */
export function filesMechanism(harness: Pick<Harness, "workdir">): Mechanism {
  return {
    name: "files",
    tools: () => FILE_TOOLS,
    sections: () => [filesSection(harness.workdir)],
  };
}
