/**
 * `course check`'s README rules: what a learner reads is checked, not trusted.
 *
 *   shape        every chapter README has the ten sections in order (and an eleventh,
 *                "Exercises", when exercises/ has some for the chapter); "How it works" at
 *                most eight steps; "What the tests pin" five to eight bullets; "Claude Code
 *                for real" dated
 *   exercises    that last section lists the chapter's exercises, each linking its statement
 *   length       a chapter README at most 400 lines (LONG_CHAPTERS 500), the top README at
 *                most 150; a Japanese or Chinese page no longer than its English one
 *   labels       every TypeScript block names the file it quotes (the excerpt rule in
 *                course.ts checks that it is verbatim)
 *   changed      "What changed" names only files that `course diff` shows added or changed
 *   citations    no spec section (§0.4), spec test ID (R1–R17) or commit hash: nothing a
 *                reader of the repository cannot look up
 *   glossary     no Japanese (Chinese) page uses a variant docs/glossary.ja.md
 *                (docs/glossary.zh.md) rules out
 *   stats        a `course stats` table in a README or docs page is the table it prints
 *   transcripts  "Run it"'s transcript is what the demo prints (async: runs every demo)
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  type Chapter,
  compareChapters,
  computeStats,
  formatStatsTable,
  listChapters,
} from "./course.ts";
import { type Exercise, listExercises } from "./exercise.ts";
import { LANGUAGE, type Lang, langOf } from "./languages.ts";

/** The sections of a chapter README, in order; `changed` stands for "What changed". */
const SECTIONS = {
  "README.md": [
    "The problem",
    "The idea",
    "Run it",
    "How it works",
    "changed",
    "Claude Code for real",
    "Try it",
    "What the tests pin",
    "Edge cases",
    "What's next",
  ],
  "README.ja.md": [
    "解決したい問題",
    "考え方",
    "動かしてみる",
    "仕組み",
    "changed",
    "本物の Claude Code では",
    "試してみる",
    "テストで固定している挙動",
    "エッジケース",
    "次の章",
  ],
  "README.zh.md": [
    "要解决的问题",
    "思路",
    "运行一下",
    "工作原理",
    "changed",
    "真实的 Claude Code",
    "动手试试",
    "测试固定的行为",
    "边界情况",
    "下一章",
  ],
} as const;

export type ReadmeName = keyof typeof SECTIONS;
export const README_NAMES = Object.keys(SECTIONS) as ReadmeName[];

/** The "What changed" heading: against the previous chapter, or everything new for the first. */
function changedHeading(readme: ReadmeName, prev: Chapter | undefined): string {
  if (readme === "README.md") {
    return prev ? `What changed from ${prev.id}` : "What changed: everything is new";
  }
  if (readme === "README.zh.md") return prev ? `相对 ${prev.id} 的变化` : "变化：全部是新的";
  return prev ? `${prev.id} からの変更点` : "変更点：すべて新規";
}

/** The last section of a chapter README whose chapter has exercises (exercises/sNN.K-…). */
export const EXERCISES_HEADING: Record<ReadmeName, string> = {
  "README.md": "Exercises",
  "README.ja.md": "演習",
  "README.zh.md": "练习",
};

/** The headings a chapter README must have, in order. */
export function expectedHeadings(
  readme: ReadmeName,
  prev: Chapter | undefined,
  exercises = false,
): string[] {
  const headings = SECTIONS[readme].map((h) =>
    h === "changed" ? changedHeading(readme, prev) : h,
  );
  return exercises ? [...headings, EXERCISES_HEADING[readme]] : headings;
}

/**
 * The Exercises section: one bullet per exercise of the chapter, in id order, each naming
 * its id and linking its statement in the README's language.
 */
export function checkExerciseList(
  md: Markdown,
  readme: ReadmeName,
  where: string,
  exercises: Exercise[],
): string[] {
  const section = md.sections.find((s) => s.heading === EXERCISES_HEADING[readme]);
  if (!section) return [];
  const bullets = section.lines.filter((l) => !l.code && l.text.startsWith("- "));
  const statement = readme;
  const wanted = exercises.map(
    (exercise) => `../../exercises/${path.basename(exercise.dir)}/${statement}`,
  );
  const found = bullets.map((l) => /\]\(([^)]+)\)/.exec(l.text)?.[1] ?? "");
  const named = bullets.every((l, i) => l.text.includes(exercises[i]?.id ?? "\0"));
  if (found.join("\n") === wanted.join("\n") && named) return [];
  return [
    `exercises: ${where}:${section.line} "${section.heading}" must list ${exercises.map((e) => e.id).join(", ")}, one bullet each with its id, linking ${wanted.join(", ")}`,
  ];
}

export const CHAPTER_LIMIT = 400;
/** s14 (MCP) and s15 (several mechanisms at once) may run longer. */
export const LONG_CHAPTERS: Record<string, number> = { s14: 500, s15: 500 };
export const TOP_LIMIT = 150;
export const MAX_STEPS = 8;
export const TEST_BULLETS = { min: 5, max: 8 };

/** "As of December 2026" / "2026 年 12 月時点": when the Claude Code docs were read. */
const DATED: Record<ReadmeName, RegExp> = {
  "README.md":
    /\bas of (?:(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}|\d{4}-\d{2}(?:-\d{2})?)\b/i,
  "README.ja.md": /\d{4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*日)?\s*時点/,
  "README.zh.md": /截至\s*\d{4}\s*年\s*\d{1,2}\s*月/,
};

// ---------------------------------------------------------------------------------------
// Reading Markdown

interface Line {
  /** 1-based */
  n: number;
  text: string;
  /** inside a fenced block (the fence lines included) */
  code: boolean;
}

export interface Fence {
  /** 1-based line of the opening fence */
  line: number;
  info: string;
  body: string;
}

interface Section {
  heading: string;
  line: number;
  lines: Line[];
  fences: Fence[];
}

export interface Markdown {
  lines: Line[];
  sections: Section[];
  fences: Fence[];
}

/** Lines with their fence state, the H2 sections and the fenced blocks of `text`. */
export function readMarkdown(text: string): Markdown {
  const raw = text.replace(/\n$/, "").split("\n");
  const lines: Line[] = [];
  const fences: Fence[] = [];
  const sections: Section[] = [];
  let open: { indent: string; fence: Fence; body: string[] } | null = null;
  raw.forEach((row, i) => {
    const n = i + 1;
    const fenceMatch = /^([ \t]*)```(.*)$/.exec(row);
    if (open === null && fenceMatch) {
      const fence: Fence = { line: n, info: (fenceMatch[2] ?? "").trim(), body: "" };
      open = { indent: fenceMatch[1] ?? "", fence, body: [] };
      lines.push({ n, text: row, code: true });
    } else if (open !== null && /^[ \t]*```[ \t]*$/.test(row)) {
      const current: { indent: string; fence: Fence; body: string[] } = open;
      current.fence.body = current.body.join("\n");
      fences.push(current.fence);
      sections.at(-1)?.fences.push(current.fence);
      open = null;
      lines.push({ n, text: row, code: true });
    } else if (open !== null) {
      const current: { indent: string; body: string[] } = open;
      current.body.push(row.startsWith(current.indent) ? row.slice(current.indent.length) : row);
      lines.push({ n, text: row, code: true });
    } else {
      if (row.startsWith("## ")) {
        sections.push({ heading: row.slice(3).trim(), line: n, lines: [], fences: [] });
      }
      lines.push({ n, text: row, code: false });
    }
    const last = lines.at(-1);
    if (last && sections.length > 0 && !(row.startsWith("## ") && !last.code)) {
      sections.at(-1)?.lines.push(last);
    }
  });
  return { lines, sections, fences };
}

/** A line's prose: inline code spans blanked (links and words in backticks are examples). */
function prose(line: Line): string {
  return line.code ? "" : line.text.replace(/`[^`]*`/g, (span) => " ".repeat(span.length));
}

function lineCount(text: string): number {
  return text.replace(/\n$/, "").split("\n").length;
}

// ---------------------------------------------------------------------------------------
// The rules

/** A chapter README's shape: sections, steps, test bullets, the date, TypeScript labels. */
export function checkShape(
  md: Markdown,
  readme: ReadmeName,
  where: string,
  prev: Chapter | undefined,
  exercises = false,
): string[] {
  const problems: string[] = [];
  const expected = expectedHeadings(readme, prev, exercises);
  const found = md.sections.map((s) => s.heading);
  if (found.join("\n") !== expected.join("\n")) {
    const missing = expected.filter((h) => !found.includes(h));
    const extra = found.filter((h) => !expected.includes(h));
    const detail = [
      missing.length > 0 ? `missing ${missing.map((h) => `"${h}"`).join(", ")}` : "",
      extra.length > 0 ? `not expected ${extra.map((h) => `"${h}"`).join(", ")}` : "",
      missing.length === 0 && extra.length === 0 ? "out of order" : "",
    ]
      .filter(Boolean)
      .join("; ");
    problems.push(
      `shape: ${where}: sections must be ${expected.map((h) => `"## ${h}"`).join(", ")} in that order (${detail})`,
    );
  }
  const section = (i: number) => md.sections.find((s) => s.heading === expected[i]);
  const how = section(3);
  if (how) {
    const steps = how.lines.filter((l) => !l.code && /^(?:### |\*\*\d+\.)/.test(l.text)).length;
    if (steps > MAX_STEPS) {
      problems.push(
        `shape: ${where}:${how.line} "${how.heading}" has ${steps} steps; at most ${MAX_STEPS}`,
      );
    }
  }
  const pinned = section(7);
  if (pinned) {
    const bullets = pinned.lines.filter((l) => !l.code && /^[-*] /.test(l.text)).length;
    if (bullets < TEST_BULLETS.min || bullets > TEST_BULLETS.max) {
      problems.push(
        `shape: ${where}:${pinned.line} "${pinned.heading}" has ${bullets} bullets; ${TEST_BULLETS.min} to ${TEST_BULLETS.max}, each a behaviour and its test file`,
      );
    }
  }
  const real = section(5);
  if (real && !DATED[readme].test(real.lines.map((l) => l.text).join("\n"))) {
    const example = {
      "README.md": '"As of December 2026, …"',
      "README.ja.md": "「2026 年 12 月時点の…」",
      "README.zh.md": "“截至 2026 年 12 月，…”",
    }[readme];
    problems.push(
      `shape: ${where}:${real.line} "${real.heading}" says when the docs were read (${example})`,
    );
  }
  for (const fence of md.fences) {
    const [lang, label] = fence.info.split(/\s+/);
    if (/^(?:ts|typescript|tsx)$/i.test(lang ?? "") && !/^src\/[\w./-]+\.tsx?$/.test(label ?? "")) {
      problems.push(
        `label: ${where}:${fence.line} a TypeScript block names no file (\`\`\`ts src/<file>.ts, quoted verbatim)`,
      );
    }
  }
  return problems;
}

/** Files named in "What changed" that `course diff` does not show added or changed. */
export function checkChanged(
  md: Markdown,
  readme: ReadmeName,
  where: string,
  prev: Chapter | undefined,
  chapter: Chapter,
): string[] {
  const heading = changedHeading(readme, prev);
  const section = md.sections.find((s) => s.heading === heading);
  if (!section) return [];
  const changed = compareChapters(prev ?? null, chapter)
    .filter((c) => c.status !== "removed")
    .map((c) => c.path);
  const problems: string[] = [];
  for (const line of section.lines) {
    if (line.code) continue;
    for (const match of line.text.matchAll(/`([\w./-]+\.(?:ts|mjs|js|json))`/g)) {
      const name = match[1] ?? "";
      if (changed.some((p) => p === name || p.endsWith(`/${name}`))) continue;
      problems.push(
        `changed: ${where}:${line.n} names ${name}, which \`course diff ${prev?.id ?? ""}${prev ? " " : ""}${chapter.id}\` does not show changed`,
      );
    }
  }
  return problems;
}

/** A citation a reader cannot follow: a spec section, a spec test ID range, a commit hash. */
const CITATIONS: Array<{ pattern: RegExp; what: string }> = [
  { pattern: /§\s*\d/, what: "a spec section" },
  { pattern: /\bR\d+\s*[–-]\s*R\d+\b/, what: "spec test IDs" },
  {
    pattern: /(?<![\w./#-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])/,
    what: "a commit hash",
  },
];

export function checkCitations(md: Markdown, where: string): string[] {
  const problems: string[] = [];
  for (const line of md.lines) {
    // Inline code counts (`git diff 49df465` cites a commit); fenced blocks do not.
    if (line.code) continue;
    const text = line.text;
    for (const { pattern, what } of CITATIONS) {
      const match = pattern.exec(text);
      if (match) {
        problems.push(
          `citation: ${where}:${line.n} cites ${what} ("${match[0]}"), which the repository does not hold`,
        );
      }
    }
  }
  return problems;
}

export interface GlossaryEntry {
  use: string;
  avoid: string[];
}

/** A language's glossary (docs/glossary.ja.md, docs/glossary.zh.md): its rows and its quotes. */
export interface Glossary {
  file: string;
  entries: GlossaryEntry[];
  quote: [string, string];
}

const QUOTES: Record<Lang, [string, string]> = { en: ['"', '"'], ja: ["「", "」"], zh: ["“", "”"] };

/** A glossary's table: the word to use and the variants to avoid, per row. */
export function readGlossary(text: string): GlossaryEntry[] {
  const entries: GlossaryEntry[] = [];
  const rows = text.split("\n");
  rows.forEach((row, i) => {
    const cells = row.split("|").map((c) => c.trim());
    // | English | use | avoid | note |  →  ["", English, use, avoid, note, ""]
    if (cells.length < 5 || /^-+$/.test(cells[1] ?? "")) return;
    // The header row is the one above the |---| row.
    if (/^\|(?:\s*:?-+:?\s*\|)+\s*$/.test(rows[i + 1] ?? "")) return;
    const avoid = (cells[3] ?? "")
      .split(/[、，,]/)
      .map((v) => v.trim())
      .filter(Boolean);
    if (avoid.length > 0) entries.push({ use: cells[2] ?? "", avoid });
  });
  return entries;
}

export function checkGlossary(md: Markdown, where: string, glossary: Glossary): string[] {
  const problems: string[] = [];
  const [open, close] = glossary.quote;
  for (const line of md.lines) {
    const text = prose(line);
    for (const entry of glossary.entries) {
      for (const variant of entry.avoid) {
        if (text.includes(variant)) {
          problems.push(
            `glossary: ${where}:${line.n} says ${open}${variant}${close}; ${glossary.file} says ${open}${entry.use}${close}`,
          );
        }
      }
    }
  }
  return problems;
}

/** The glossary of each language that has one. */
function readGlossaries(root: string): Partial<Record<Lang, Glossary>> {
  const glossaries: Partial<Record<Lang, Glossary>> = {};
  for (const lang of ["ja", "zh"] as const) {
    const file = `docs/glossary${LANGUAGE[lang].suffix}`;
    const text = read(path.join(root, file));
    if (text !== null)
      glossaries[lang] = { file, entries: readGlossary(text), quote: QUOTES[lang] };
  }
  return glossaries;
}

/** Where a `course stats` table is printed in a page: its lines, from its header row on. */
function statsTables(md: Markdown): Array<{ line: number; text: string }> {
  const tables: Array<{ line: number; text: string }> = [];
  for (let i = 0; i < md.lines.length; i++) {
    const line = md.lines[i];
    if (!line || line.code || !/^\|\s*Chapter\s*\|\s*Folder\s*\|\s*Files added/.test(line.text)) {
      continue;
    }
    const rows: string[] = [];
    for (let j = i; j < md.lines.length && md.lines[j]?.text.startsWith("|"); j++) {
      rows.push(md.lines[j]?.text ?? "");
    }
    tables.push({ line: line.n, text: `${rows.join("\n")}\n` });
  }
  return tables;
}

export function checkStats(md: Markdown, where: string, table: string): string[] {
  return statsTables(md)
    .filter((t) => t.text !== table)
    .map(
      (t) =>
        `stats: ${where}:${t.line} the table is not what \`pnpm course stats\` prints now — paste it again`,
    );
}

// ---------------------------------------------------------------------------------------
// The whole repository

function read(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/** The Markdown pages outside the chapters that the rules read: the top READMEs and docs/. */
function otherPages(root: string): string[] {
  const docs = path.join(root, "docs");
  const inDocs = fs.existsSync(docs)
    ? fs
        .readdirSync(docs)
        .filter((name) => name.endsWith(".md"))
        .sort()
        .map((name) => `docs/${name}`)
    : [];
  return [...README_NAMES, ...inDocs].filter((rel) => fs.existsSync(path.join(root, rel)));
}

/** Every README rule but the transcripts: one line per problem. */
export function checkReadmes(root: string): string[] {
  const problems: string[] = [];
  const chapters = listChapters(root);
  const glossaries = readGlossaries(root);
  const table = formatStatsTable(computeStats(root));
  const exercises = listExercises(root);
  chapters.forEach((chapter, i) => {
    const prev = chapters[i - 1];
    const lengths: Partial<Record<ReadmeName, number>> = {};
    for (const readme of README_NAMES) {
      const text = read(path.join(chapter.dir, readme));
      if (text === null) continue;
      const where = `chapters/${chapter.folder}/${readme}`;
      const md = readMarkdown(text);
      lengths[readme] = lineCount(text);
      const own = exercises.filter((exercise) => exercise.chapter === chapter.id);
      problems.push(...checkShape(md, readme, where, prev, own.length > 0));
      problems.push(...checkExerciseList(md, readme, where, own));
      problems.push(...checkChanged(md, readme, where, prev, chapter));
      problems.push(...checkCitations(md, where));
      const glossary = glossaries[langOf(readme)];
      if (glossary) problems.push(...checkGlossary(md, where, glossary));
    }
    const limit = LONG_CHAPTERS[chapter.id] ?? CHAPTER_LIMIT;
    problems.push(...lengthProblems(`chapters/${chapter.folder}/`, lengths, limit));
  });
  const lengths: Partial<Record<ReadmeName, number>> = {};
  for (const rel of otherPages(root)) {
    const text = read(path.join(root, rel)) ?? "";
    const md = readMarkdown(text);
    if ((README_NAMES as string[]).includes(rel)) lengths[rel as ReadmeName] = lineCount(text);
    problems.push(...checkCitations(md, rel));
    problems.push(...checkStats(md, rel, table));
    const glossary = glossaries[langOf(rel)];
    if (glossary && rel !== glossary.file) problems.push(...checkGlossary(md, rel, glossary));
  }
  problems.push(...lengthProblems("", lengths, TOP_LIMIT));
  return problems;
}

function lengthProblems(
  dir: string,
  lengths: Partial<Record<ReadmeName, number>>,
  limit: number,
): string[] {
  const problems: string[] = [];
  const en = lengths["README.md"];
  if (en !== undefined && en > limit) {
    problems.push(`length: ${dir}README.md has ${en} lines; at most ${limit}`);
  }
  for (const readme of ["README.ja.md", "README.zh.md"] as const) {
    const other = lengths[readme];
    if (en !== undefined && other !== undefined && other > en) {
      problems.push(
        `length: ${dir}${readme} has ${other} lines, more than README.md's ${en}; no longer than the English page`,
      );
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------
// Run it: the transcript against the demo's real output

/**
 * What differs from one run of a demo to the next, made the same on both sides: the fake
 * API's port, the temporary workspace, time stamps in file names, random IDs, durations,
 * and the numbers of the `[usage]` and `[cost]` lines (the clock line in the prompt changes with the day
 * and the time zone, and with it the token counts).
 */
export function normalizeTranscript(text: string): string {
  return (
    text
      .replace(/\r\n/g, "\n")
      .replace(/\S*harness-demo-s\d\d-[A-Za-z0-9…]+/g, "<workspace>")
      .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:<port>")
      .replace(/\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d{3})?(?:-[0-9a-f]+)?/g, "<stamp>")
      .replace(/(?<=_)[0-9a-f]{8}(?:[0-9a-f]{8})?(?![\w])/g, "<id>")
      .replace(/\breq_\d{6}\b/g, "req_<id>")
      .replace(/\b\d+(?:\.\d+)? ?(?:ms|s)\b/g, "<time>")
      // Token counts and prices: the prompt's clock line (weekday, time zone) moves them a little.
      .replace(/^(\[(?:usage|cost)\].*)$/gm, (line) => line.replace(/\d[\d,.]*/g, "#"))
      .replace(/[ \t]+$/gm, "")
  );
}

/** A line in a transcript that stands for lines left out. */
const ELIDED = /^\s*(?:…|\.\.\.)\s*$/;

/**
 * Null when every run of lines of `transcript` (split at `…` lines) appears, in order and as
 * consecutive lines, in `output`, after normalising both; else the first run that does not.
 */
export function transcriptProblem(transcript: string, output: string): string | null {
  const have = normalizeTranscript(output).split("\n");
  const pieces: string[][] = [[]];
  for (const row of normalizeTranscript(transcript).split("\n")) {
    if (ELIDED.test(row)) pieces.push([]);
    else pieces.at(-1)?.push(row);
  }
  let from = 0;
  for (const piece of pieces.filter((p) => p.length > 0)) {
    let at = -1;
    for (let i = from; i + piece.length <= have.length && at < 0; i++) {
      if (piece.every((row, k) => have[i + k] === row)) at = i;
    }
    if (at < 0) return piece[0] ?? "";
    from = at + piece.length;
  }
  return null;
}

/** tsx's ESM hooks, found from here: a chapter folder outside this repository has none. */
const TSX = import.meta.resolve("tsx/esm");

/** The demo's output, run as `pnpm --filter sNN demo` runs it (tsx, no configuration). */
export function runDemo(chapter: Chapter): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", TSX, "src/demo.ts"], {
      cwd: chapter.dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const kept = /workspace is kept at (\S+)/.exec(out)?.[1];
      if (kept?.includes("harness-demo-")) fs.rmSync(kept, { recursive: true, force: true });
      if (code === 0) resolve(out);
      else reject(new Error(`the demo exited with ${code}: ${err.trim().split("\n").at(-1)}`));
    });
  });
}

export type DemoRunner = (chapter: Chapter) => Promise<string>;

/**
 * "Run it" in every chapter README: it shows the demo command and the demo's transcript (a
 * ```text block), and the transcript is what the demo prints. Demos run two at a time.
 */
export async function checkTranscripts(root: string, run: DemoRunner = runDemo): Promise<string[]> {
  const chapters = listChapters(root);
  const outputs = new Map<string, Promise<string>>();
  const queue = [...chapters];
  const worker = async () => {
    for (let chapter = queue.shift(); chapter; chapter = queue.shift()) {
      const output = run(chapter);
      output.catch(() => {});
      outputs.set(chapter.id, output);
      await output.catch(() => {});
    }
  };
  await Promise.all([worker(), worker()]);
  const problems: string[] = [];
  for (const chapter of chapters) {
    for (const readme of README_NAMES) {
      const text = read(path.join(chapter.dir, readme));
      if (text === null) continue;
      const where = `chapters/${chapter.folder}/${readme}`;
      const heading = SECTIONS[readme][2];
      const section = readMarkdown(text).sections.find((s) => s.heading === heading);
      if (!section) continue; // the shape rule names the missing section
      const command = section.fences.some((f) =>
        new RegExp(`pnpm (?:--silent )?--filter ${chapter.id} demo`).test(f.body),
      );
      if (!command) {
        problems.push(
          `transcript: ${where}:${section.line} "${heading}" shows no \`pnpm --silent --filter ${chapter.id} demo\``,
        );
      }
      const transcript = section.fences.find((f) => f.info === "text");
      if (!transcript) {
        problems.push(
          `transcript: ${where}:${section.line} "${heading}" has no \`\`\`text block with the demo's transcript`,
        );
        continue;
      }
      let output: string;
      try {
        output = await (outputs.get(chapter.id) ?? run(chapter));
      } catch (error) {
        problems.push(`transcript: ${where}: the demo failed (${(error as Error).message})`);
        continue;
      }
      const missing = transcriptProblem(transcript.body, output);
      if (missing !== null) {
        problems.push(
          `transcript: ${where}:${transcript.line} is not what the demo prints (from "${missing.trim()}") — run \`pnpm --silent --filter ${chapter.id} demo\` and copy it again`,
        );
      }
    }
  }
  return problems;
}
