/**
 * The memory store (s09): one Markdown file per record under `<WORKDIR>/.harness/memory/`,
 * YAML frontmatter (name, description, type) then the body, and a `MEMORY.md` index that
 * is derived data, rebuilt from the folder after every write. Every write is a temp file
 * plus rename. A record whose frontmatter cannot be read is listed (with its file name as
 * its name) and never rewritten.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { harnessPath, onFirstUse, writeFileAtomic } from "shared";
import { parseFrontmatter } from "./frontmatter.ts";

/** The YAML writer, loaded when the first record is written. */
const yaml = onFirstUse<typeof import("yaml")>(import.meta.url, "yaml");

export const MEMORY_TYPES = ["user", "feedback", "project", "reference"] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];
export const INDEX_FILE = "MEMORY.md";

export interface MemoryRecord {
  filename: string;
  name: string;
  description: string;
  type: MemoryType;
  body: string;
  /** Why the frontmatter could not be read (the record is listed, never rewritten). */
  corrupt: string | null;
}

export interface NewRecord {
  name: string;
  description: string;
  type: MemoryType;
  body: string;
}

/** A record's file name: lower case, runs of other characters become `-`. */
export function memorySlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_]+/gu, "-")
    .replace(/^[-_]+|[-_]+$/g, "");
  return slug || "memory";
}

export class MemoryStore {
  readonly dir: string;

  readonly workdir: string;

  constructor(workdir: string) {
    this.workdir = workdir;
    this.dir = path.join(workdir, ".harness", "memory");
  }

  /** The path of a record file; refuses anything but a bare name inside the store. */
  pathOf(filename: string, allowIndex = false): string {
    if (
      !filename ||
      filename !== path.basename(filename) ||
      filename === "." ||
      filename === ".."
    ) {
      throw new Error(`Invalid memory filename: ${filename}`);
    }
    if (filename === INDEX_FILE && !allowIndex) {
      throw new Error("The memory index is not a memory record");
    }
    const full = path.resolve(this.dir, filename);
    if (path.dirname(full) !== path.resolve(this.dir))
      throw new Error("Memory path escapes the store");
    return full;
  }

  /** A record file's whole text, or null (missing, or a name that is not a record's). */
  read(filename: string): string | null {
    try {
      return readFileSync(this.pathOf(filename), "utf8");
    } catch {
      return null;
    }
  }

  /** Every record, sorted by file name; non-files and the index are skipped. */
  list(): MemoryRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const records: MemoryRecord[] = [];
    for (const filename of names.filter((n) => n.endsWith(".md") && n !== INDEX_FILE).sort()) {
      const file = path.join(this.dir, filename);
      if (!isFile(file)) continue;
      let source: string;
      try {
        source = readFileSync(file, "utf8");
      } catch (error) {
        records.push({
          filename,
          name: filename.slice(0, -3),
          description: "",
          type: "project",
          body: "",
          corrupt: `cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`,
        });
        continue;
      }
      const parsed = parseFrontmatter(source);
      const meta = parsed.meta ?? {};
      const text = (value: unknown) => (typeof value === "string" ? value.trim() : "");
      const type = MEMORY_TYPES.includes(meta.type as MemoryType)
        ? (meta.type as MemoryType)
        : "project";
      records.push({
        filename,
        name: text(meta.name) || filename.slice(0, -3),
        description: text(meta.description),
        type,
        body: parsed.body.trim(),
        corrupt: parsed.meta === null ? (parsed.problem ?? "unreadable frontmatter") : null,
      });
    }
    return records;
  }

  /** Writes one record as `<slug>.md` (temp file + rename) and rebuilds the index. */
  write(record: NewRecord): string {
    const checked = validateRecord(record, false);
    if (typeof checked === "string") throw new Error(checked);
    const filename = `${memorySlug(checked.name)}.md`;
    const front = yaml().stringify(
      { name: checked.name, description: checked.description, type: checked.type },
      { lineWidth: 0 },
    );
    writeFileAtomic(
      harnessPath(this.workdir, "memory", filename),
      `---\n${front}---\n\n${checked.body.trim()}\n`,
    );
    this.rebuildIndex();
    return filename;
  }

  remove(filename: string): void {
    rmSync(this.pathOf(filename), { force: true });
  }

  /** `- [name](file) - description` per record; derived data, rebuilt from the folder. */
  rebuildIndex(): void {
    const lines = this.list().map((record) => {
      const description = collapse(record.description) || firstLine(record.body);
      return `- [${collapse(record.name)}](${record.filename}) - ${description}`;
    });
    const text = lines.length > 0 ? `${lines.join("\n")}\n` : "";
    if (!text && !isDirectory(this.dir)) return;
    writeFileAtomic(harnessPath(this.workdir, "memory", INDEX_FILE), text);
  }

  readIndex(): string {
    const file = this.pathOf(INDEX_FILE, true);
    // Asked before every model call, and usually absent: a failed read costs an exception.
    if (!existsSync(file)) return "";
    try {
      return readFileSync(file, "utf8").trim();
    } catch {
      return "";
    }
  }
}

/** Checks a proposed record; `requireScope` for extraction (consolidation has no scope). */
export function validateRecord(
  value: unknown,
  requireScope: boolean,
): (NewRecord & { scope?: string }) | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not an object";
  const item = value as Record<string, unknown>;
  for (const key of ["name", "description", "body"] as const) {
    if (typeof item[key] !== "string" || !(item[key] as string).trim())
      return `${key} must be a non-empty string`;
  }
  if (!MEMORY_TYPES.includes(item.type as MemoryType))
    return `type must be one of ${MEMORY_TYPES.join(", ")}`;
  if (requireScope && item.scope !== "persistent" && item.scope !== "current_task") {
    return "scope must be persistent or current_task";
  }
  return {
    name: (item.name as string).trim(),
    description: (item.description as string).trim(),
    type: item.type as MemoryType,
    body: (item.body as string).trim(),
    ...(typeof item.scope === "string" ? { scope: item.scope } : {}),
  };
}

/** Whitespace runs become one space, ends trimmed. */
export function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function firstLine(body: string): string {
  return collapse(body.split("\n").find((line) => line.trim()) ?? "");
}

export function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
