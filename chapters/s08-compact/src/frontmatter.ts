/**
 * YAML frontmatter: the `---` block at the top of a Markdown file (an agent definition in
 * `.claude/agents/`), read with YAML 1.2's core schema as Claude Code reads it. A file
 * without one has no metadata; a broken one yields a diagnostic with line and column,
 * never an exception.
 */
import { asObject, onFirstUse } from "shared";

/** The YAML parser, loaded when the first file with frontmatter is read. */
const yaml = onFirstUse<typeof import("yaml")>(import.meta.url, "yaml");

/** Opens and closes the frontmatter: a line holding exactly this (a trailing CR allowed). */
const DELIMITER = "---";

export interface Frontmatter {
  /** The YAML mapping; `{}` when there is no frontmatter; null when it is unusable. */
  meta: Record<string, unknown> | null;
  /** The text after the closing delimiter, trimmed; the whole text when there is none. */
  body: string;
  /** Why `meta` is null, for a diagnostic; null otherwise. */
  problem: string | null;
}

/**
 * Splits `---` frontmatter from the body.
 *
 * The rule: the opening delimiter is the text's first line; the closing one is the first
 * later line that is exactly `---`. Whole-line matching is what keeps `a---b` and an
 * indented `---` inside a block scalar from closing early. Taking the *first* such line
 * is also right in YAML's own terms: a `---` at column 0 is a document marker that YAML
 * forbids inside any scalar or collection, so it can never belong to a block scalar, and
 * every later candidate would put that marker into the YAML source and fail to parse as
 * one document. Trying the candidates in order would always settle on the first.
 */
export function parseFrontmatter(text: string): Frontmatter {
  // Split on LF only and drop each line's CR, so a CRLF file reads exactly like an LF one.
  const lines = text.split("\n");
  if (withoutCR(lines[0]) !== DELIMITER) return { meta: {}, body: text, problem: null };
  const close = lines.findIndex((line, index) => index > 0 && withoutCR(line) === DELIMITER);
  if (close === -1) {
    return { meta: null, body: text, problem: "frontmatter has no closing '---' line" };
  }
  const source = lines.slice(1, close).map(withoutCR).join("\n");
  const body = lines
    .slice(close + 1)
    .join("\n")
    .trim();
  return { ...readYaml(source), body };
}

function withoutCR(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

/** The YAML source starts on the file's second line (after the opening delimiter). */
const FIRST_YAML_LINE = 2;

function readYaml(source: string): Omit<Frontmatter, "body"> {
  // YAML 1.2's core schema: `2024-01-01` and `yes` stay strings, as Claude Code reads them.
  const document = yaml().parseDocument(source, {
    version: "1.2",
    schema: "core",
    prettyErrors: false,
    logLevel: "silent",
  });
  const error = document.errors[0];
  if (error) {
    const { line, column } = lineAndColumn(source, error.pos[0]);
    return {
      meta: null,
      problem: `frontmatter is not valid YAML (line ${line}, column ${column}: ${error.message})`,
    };
  }
  let value: unknown;
  try {
    value = document.toJS();
  } catch (caught) {
    // Too many aliases (a "billion laughs" document) is refused here rather than expanded.
    return { meta: null, problem: `frontmatter is not valid YAML (${(caught as Error).message})` };
  }
  // Nothing between the delimiters (or only comments) is no metadata, not a broken one.
  if (value === null || value === undefined) return { meta: {}, problem: null };
  const mapping = asObject(value);
  if (mapping === null || value instanceof Date) {
    return { meta: null, problem: `frontmatter is ${kindOf(value)}, not a mapping` };
  }
  return { meta: mapping, problem: null };
}

/** 1-based line (of the whole file) and column of an offset into the YAML source. */
function lineAndColumn(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  const line = before.split("\n").length - 1 + FIRST_YAML_LINE;
  return { line, column: offset - lineStart + 1 };
}

/** How a diagnostic names a value's type. */
export function kindOf(value: unknown): string {
  if (value === null || value === undefined) return "empty";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return "a date";
  if (typeof value === "object") return "a mapping";
  return `a ${typeof value}`;
}
