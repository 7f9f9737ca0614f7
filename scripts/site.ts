/**
 * `pnpm course site`: the course as a static site, generated from the repository itself so it
 * cannot drift from the code. An index with the chapter timeline; a page per chapter with
 * its diagram, how to run it, its src/ files, a step-through of its real demo, the
 * side-by-side diff against the previous chapter and its README in English, Japanese and
 * Chinese; a page per chapter pair and per exercise. Pages read without JavaScript; site.js only adds the language
 * switch and the diff toggles.
 */
import fs, { createReadStream, existsSync, readdirSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import hljs from "highlight.js/lib/common";
import { Marked, type Tokens } from "marked";
import {
  type Chapter,
  type ChapterStats,
  CourseError,
  compareChapters,
  computeStats,
  type FileChange,
  listChapters,
  listFiles,
  splitLines,
} from "./course.ts";
import { type Exercise, listExercises } from "./exercise.ts";
import { LANGS, LANGUAGE, type Lang, langOf } from "./languages.ts";
import {
  type DemoTrace,
  emptySeen,
  esc,
  MARKS,
  remember,
  renderSteps,
  type Seen,
  traceDemo,
} from "./site-demo.ts";

const ASSETS = path.join(path.dirname(fileURLToPath(import.meta.url)), "site-assets");
/**
 * Written into every site folder: the build empties only a folder that holds it. Once the
 * build is done it holds the build's report as JSON (pages, and what each demo showed).
 */
export const SITE_MARKER = ".course-site";

export interface SiteOptions {
  root: string;
  out: string;
  /** Progress lines (one per page group). */
  say?: (line: string) => void;
  /** The chapters' demo runs, in chapter order, when the caller has run them already. */
  traces?: readonly DemoTrace[];
}

export interface SiteReport {
  pages: string[];
  /** Per chapter: how often each of its marks showed in its demo's step-through. */
  marks: Record<string, Record<string, number>>;
  requests: Record<string, number>;
}

// ---------------------------------------------------------------------------
// Highlighting

const LANGUAGES: Record<string, string> = {
  ts: "typescript",
  mts: "typescript",
  js: "javascript",
  mjs: "javascript",
  json: "json",
  md: "markdown",
  sh: "bash",
  bash: "bash",
  yaml: "yaml",
  yml: "yaml",
  typescript: "typescript",
  javascript: "javascript",
};

function languageOf(file: string): string | undefined {
  const ext = file.includes(".") ? file.slice(file.lastIndexOf(".") + 1) : file;
  return LANGUAGES[ext.toLowerCase()];
}

const TAG = /<span class="[^"]*">|<\/span>/g;

/**
 * Highlighted HTML split into lines, each one balanced: a span open at a line's end is
 * closed there and opened again on the next line, so any line can stand alone in a diff row.
 */
export function highlightLines(code: string, language: string | undefined): string[] {
  const html =
    language === undefined
      ? esc(code)
      : hljs.highlight(code, { language, ignoreIllegals: true }).value;
  const open: string[] = [];
  return html.split("\n").map((line) => {
    const prefix = open.join("");
    for (const tag of line.match(TAG) ?? []) {
      if (tag === "</span>") open.pop();
      else open.push(tag);
    }
    return prefix + line + "</span>".repeat(open.length);
  });
}

const highlighted = new Map<string, string[]>();

/** highlightLines, memoized: most files are the same from one chapter to the next. */
function highlightFile(text: string, file: string): string[] {
  const language = languageOf(file);
  const key = `${language}\0${text}`;
  let lines = highlighted.get(key);
  if (lines === undefined) {
    lines = highlightLines(text.endsWith("\n") ? text.slice(0, -1) : text, language);
    highlighted.set(key, lines);
  }
  return lines;
}

// ---------------------------------------------------------------------------
// README sections and Markdown

interface Readme {
  /** "TodoWrite" from "# s05: TodoWrite" */
  title: string;
  /** The H2 sections in order, each without its heading line. */
  sections: Array<{ heading: string; body: string }>;
  /** Everything after the H1 and its navigation line. */
  body: string;
}

function readReadme(file: string): Readme {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    throw new CourseError(
      `cannot read ${file}: every chapter needs ${LANGS.map((l) => LANGUAGE[l].readme).join(", ")}`,
      1,
    );
  }
  const lines = text.split("\n");
  const h1 = lines.findIndex((l) => l.startsWith("# "));
  const title = (lines[h1] ?? "").replace(/^# (s\d\d: )?/, "").trim();
  let start = h1 + 1;
  while (
    start < lines.length &&
    (lines[start]?.trim() === "" || /^\[[^\]]+\]\(README/.test(lines[start] ?? ""))
  ) {
    start++;
  }
  const body = lines.slice(start).join("\n");
  const sections: Readme["sections"] = [];
  let fence = false;
  for (const line of lines.slice(start)) {
    if (line.startsWith("```")) fence = !fence;
    if (!fence && line.startsWith("## "))
      sections.push({ heading: line.slice(3).trim(), body: "" });
    else if (sections.length > 0) sections[sections.length - 1]!.body += `${line}\n`;
  }
  return { title, sections, body };
}

/** The first fenced block of a Markdown text (a chapter's diagram, its run commands). */
function firstFence(markdown: string): { lang: string; code: string } | null {
  const m = /^```(\w*)\n([\s\S]*?)^```/m.exec(markdown);
  return m ? { lang: m[1] ?? "", code: m[2] ?? "" } : null;
}

/** The first paragraph of a Markdown text. */
function firstParagraph(markdown: string): string {
  return markdown.trim().split(/\n\s*\n/)[0] ?? "";
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function slug(text: string): string {
  return text
    .toLowerCase()
    .trim()
    .replace(/<[^>]*>/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

export interface LinkContext {
  root: string;
  /** The Markdown file's folder, relative to the root ("" or "chapters/s05-todo"). */
  dir: string;
  lang: Lang;
  chapters: readonly Chapter[];
  /** Images to copy: source path → name under img/. */
  images: Map<string, string>;
}

/** Where a README's link points on the site, or null when the site has no such page. */
function siteHref(href: string, ctx: LinkContext): string | null {
  if (/^[a-z]+:/i.test(href)) return href;
  const [target = "", hash = ""] = href.split("#");
  if (target === "") return `#${ctx.lang}-${hash}`;
  const rel = path.posix.normalize(path.posix.join(ctx.dir, decodeURI(target))).replace(/\/$/, "");
  // A page opens in the language of the README it stands for: #ja, #zh-<heading>.
  const anchor = (lang: Lang) => (hash ? `#${lang}-${hash}` : lang === "en" ? "" : `#${lang}`);
  const readme = /^README(\.\w\w)?\.md$/;
  if (readme.test(rel)) return `index.html${anchor(langOf(rel))}`;
  // An exercise's statement is a page of its own.
  const exercise = /^exercises\/(s\d\d\.\d+)-[a-z0-9-]+\/(README(?:\.\w\w)?\.md)$/.exec(rel);
  if (exercise) return `${exercise[1]}.html${anchor(langOf(exercise[2] ?? ""))}`;
  const m = /^chapters\/(s\d\d-[^/]+)(?:\/(.*))?$/.exec(rel);
  const chapter = m ? ctx.chapters.find((c) => c.folder === m[1]) : undefined;
  if (m && chapter) {
    const inner = m[2] ?? "";
    if (inner === "") return `${chapter.id}.html`;
    if (readme.test(inner)) return `${chapter.id}.html${anchor(langOf(inner))}`;
    if (existsSync(path.join(chapter.dir, inner)) && !inner.endsWith("/")) {
      return `${chapter.id}.html#${fileAnchor(inner)}`;
    }
  }
  return null;
}

/** A README's Markdown as the site shows it: links to the site's pages, images copied. */
export function markdown(text: string, ctx: LinkContext): string {
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading({ tokens, depth, text: raw }: Tokens.Heading) {
        const inner = this.parser.parseInline(tokens);
        return `<h${depth} id="${esc(`${ctx.lang}-${slug(raw)}`)}">${inner}</h${depth}>\n`;
      },
      link({ href, title, tokens }: Tokens.Link) {
        const inner = this.parser.parseInline(tokens);
        const to = siteHref(href, ctx);
        if (to === null)
          return `<span class="repo-path" title="${esc(href)} (in the repository)">${inner}</span>`;
        const titleAttr = title ? ` title="${esc(title)}"` : "";
        return `<a href="${esc(to)}"${titleAttr}>${inner}</a>`;
      },
      image({ href, text: alt }: Tokens.Image) {
        const source = path.join(ctx.root, ctx.dir, decodeURI(href));
        if (/^[a-z]+:/i.test(href) || !existsSync(source)) return esc(alt);
        const name = `${ctx.dir.replace(/\//g, "-")}${ctx.dir ? "-" : ""}${path.basename(source)}`;
        ctx.images.set(source, name);
        return `<img src="img/${esc(name)}" alt="${esc(alt)}" loading="lazy">`;
      },
      // A README's text is never markup: `mcp__<server>__<tool>` outside backticks stays text.
      html({ text: raw }: Tokens.HTML | Tokens.Tag) {
        return esc(raw);
      },
      code({ text: code, lang }: Tokens.Code) {
        const language = lang ? languageOf(lang) : undefined;
        const body = language
          ? hljs.highlight(code, { language, ignoreIllegals: true }).value
          : esc(code);
        return `<pre class="code"><code class="hljs">${body}</code></pre>\n`;
      },
    },
  });
  return marked.parse(text, { async: false });
}

// ---------------------------------------------------------------------------
// Page pieces

/** Every language in the page; CSS shows one once site.js has run, all without it. */
const t = (en: string, ja: string, zh: string) =>
  LANGS.map((lang) => {
    const text = { en, ja, zh }[lang];
    return lang === "en"
      ? `<span class="en">${text}</span>`
      : `<span class="${lang}" lang="${LANGUAGE[lang].html}">${text}</span>`;
  }).join("");

function page(title: string, body: string, nav: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%23335'/%3E%3C/svg%3E">
<link rel="stylesheet" href="style.css">
<script src="site.js"></script>
</head>
<body>
<header class="top"><nav>${nav}</nav><div class="lang-switch" role="group" aria-label="Language">${LANGS.map((lang) => `<button type="button" data-lang="${lang}" lang="${LANGUAGE[lang].html}">${LANGUAGE[lang].name}</button>`).join("")}</div></header>
<main>
${body}
</main>
<footer>Generated by <code>pnpm course site</code> from the repository: the code, READMEs and demo logs shown here are the chapters' own.</footer>
</body>
</html>
`;
}

function statsLine(s: ChapterStats): string {
  const files: string[] = [];
  if (s.filesAdded > 0) files.push(`${s.filesAdded} new`);
  if (s.filesChanged > 0) files.push(`${s.filesChanged} changed`);
  if (s.filesRemoved > 0) files.push(`${s.filesRemoved} removed`);
  return `<span class="stat"><span class="plus">+${s.linesAdded}</span> <span class="minus">−${s.linesRemoved}</span> · ${files.join(", ") || "no files"} · ${s.codeLines} lines</span>`;
}

const fileAnchor = (rel: string) => `file-${slug(rel.replace(/[/.]/g, "-"))}`;
const diffAnchor = (rel: string) => `diff-${slug(rel.replace(/[/.]/g, "-"))}`;

function diffRows(change: FileChange, before: string[], after: string[]): string {
  const rows: string[] = [];
  const cell = (n: number | null, html: string | undefined, cls: string) =>
    n === null
      ? `<td class="ln"></td><td class="code empty"></td>`
      : `<td class="ln">${n}</td><td class="code ${cls}">${html ?? ""}</td>`;
  for (const hunk of change.hunks) {
    rows.push(
      `<tr class="hunk"><td colspan="4">@@ −${hunk.oldStart},${hunk.oldCount} +${hunk.newStart},${hunk.newCount} @@</td></tr>`,
    );
    let oldN = hunk.oldStart;
    let newN = hunk.newStart;
    let i = 0;
    while (i < hunk.edits.length) {
      const edit = hunk.edits[i]!;
      if (edit.kind === "equal") {
        rows.push(
          `<tr>${cell(oldN, before[oldN - 1], "eq")}${cell(newN, after[newN - 1], "eq")}</tr>`,
        );
        oldN++;
        newN++;
        i++;
        continue;
      }
      const dels: number[] = [];
      const ins: number[] = [];
      while (i < hunk.edits.length && hunk.edits[i]!.kind !== "equal") {
        if (hunk.edits[i]!.kind === "delete") dels.push(oldN++);
        else ins.push(newN++);
        i++;
      }
      for (let k = 0; k < Math.max(dels.length, ins.length); k++) {
        const d = dels[k] ?? null;
        const a = ins[k] ?? null;
        rows.push(
          `<tr>${cell(d, d === null ? "" : before[d - 1], "del")}${cell(a, a === null ? "" : after[a - 1], "ins")}</tr>`,
        );
      }
    }
  }
  return rows.join("\n");
}

/**
 * A new or removed file: its lines numbered, as one block rather than a table row per line
 * (a new file is most of a chapter's diff, and a block lays out several times faster).
 */
function wholeFile(change: FileChange, holder: Chapter | null): string {
  const cls = change.status === "added" ? "ins" : "del";
  const lines = highlightFile(readText(holder?.dir, change.path), change.path);
  const numbers = lines.map((_, i) => i + 1).join("\n");
  const heading =
    change.status === "added" ? `new in ${holder?.id}` : `removed after ${holder?.id}`;
  return `<div class="whole ${cls}"><div class="whole-head">${esc(heading)}</div><div class="whole-body"><pre class="ln">${numbers}</pre><pre class="code"><code>${lines.join("\n")}</code></pre></div></div>`;
}

function readText(dir: string | undefined, rel: string): string {
  if (dir === undefined) return "";
  try {
    return fs.readFileSync(path.join(dir, rel), "utf8");
  } catch {
    return "";
  }
}

/** New files first (the chapter's mechanism), then changed ones, the demo script last. */
function mechanismFirst(changes: FileChange[]): FileChange[] {
  const rank = (c: FileChange) =>
    c.status === "added" ? 0 : c.path === "src/demo.ts" ? 2 : c.path.startsWith("src/") ? 1 : 3;
  return [...changes].sort((a, b) => rank(a) - rank(b));
}

function renderDiff(
  prev: Chapter | null,
  chapter: Chapter,
  changes: readonly FileChange[],
): string {
  if (changes.length === 0)
    return `<p>${t("No file differs.", "違うファイルはありません。", "没有不同的文件。")}</p>`;
  const label = prev?.id ?? "nothing";
  const files = changes.map((change) => {
    const head = `<span class="path">${esc(change.path)}</span> <span class="status ${change.status}">${change.status === "added" ? "new" : change.status}</span> <span class="plus">+${change.added}</span> <span class="minus">−${change.removed}</span>`;
    const body = change.binary
      ? `<p>${t("Binary file.", "バイナリファイルです。", "二进制文件。")}</p>`
      : change.status === "changed"
        ? `<div class="diff-scroll"><table class="diff"><colgroup><col class="ln"><col><col class="ln"><col></colgroup><thead><tr><th colspan="2">${esc(label)}</th><th colspan="2">${esc(chapter.id)}</th></tr></thead><tbody>${diffRows(
            change,
            highlightFile(readText(prev?.dir, change.path), change.path),
            highlightFile(readText(chapter.dir, change.path), change.path),
          )}</tbody></table></div>`
        : wholeFile(change, change.status === "added" ? chapter : prev);
    return `<details class="file" id="${diffAnchor(change.path)}" open><summary>${head}</summary>${body}</details>`;
  });
  return `<div class="diff-tools" hidden><button type="button" data-diff="collapse">${t("Collapse all", "すべて閉じる", "全部折叠")}</button><button type="button" data-diff="expand">${t("Expand all", "すべて開く", "全部展开")}</button><button type="button" data-diff="wrap">${t("Wrap lines", "折り返す", "自动换行")}</button></div>\n${files.join("\n")}`;
}

// ---------------------------------------------------------------------------
// The build

interface ChapterInfo {
  chapter: Chapter;
  /** The chapter's README in each language. */
  readmes: Record<Lang, Readme>;
  stats: ChapterStats;
}

/** The title in each language, one shown at a time: "Tool Use", "ツールの利用 (Tool Use)", … */
function titles(info: ChapterInfo): string {
  return t(esc(info.readmes.en.title), esc(info.readmes.ja.title), esc(info.readmes.zh.title));
}

function section(id: string, heading: [string, string, string], body: string): string {
  return `<section id="${id}"><h2>${t(...(heading.map(esc) as [string, string, string]))}</h2>\n${body}\n</section>`;
}

/** A block of HTML per language, made by `html`. */
function multilingual(html: (lang: Lang) => string): string {
  return LANGS.map((lang) =>
    lang === "en"
      ? `<div class="en">${html(lang)}</div>`
      : `<div class="${lang}" lang="${LANGUAGE[lang].html}">${html(lang)}</div>`,
  ).join("");
}

function chapterNav(infos: readonly ChapterInfo[], at: number): string {
  const prev = infos[at - 1];
  const next = infos[at + 1];
  const links = [`<a href="index.html">${COURSE}</a>`];
  if (prev)
    links.push(
      `<a href="${prev.chapter.id}.html" rel="prev">← ${prev.chapter.id} ${titles(prev)}</a>`,
    );
  if (next)
    links.push(
      `<a href="${next.chapter.id}.html" rel="next">${next.chapter.id} ${titles(next)} →</a>`,
    );
  return links.join(" ");
}

/** Where each file of a chapter last changed: this chapter, or the earlier one that made it so. */
function lastChanged(
  infos: readonly ChapterInfo[],
  at: number,
  rel: string,
): ChapterInfo | undefined {
  const text = readText(infos[at]!.chapter.dir, rel);
  let owner: ChapterInfo | undefined = infos[at];
  for (let i = at - 1; i >= 0; i--) {
    if (readText(infos[i]!.chapter.dir, rel) !== text) break;
    owner = infos[i];
  }
  return owner;
}

/** What every page of one build shares. */
interface Build {
  root: string;
  infos: ChapterInfo[];
  /** The link context for a Markdown file in `dir` (relative to the root), in `lang`. */
  ctx: (dir: string, lang: Lang) => LinkContext;
}

const COURSE = t("Course", "コース", "课程");
const IDEA: Record<Lang, string> = { en: "The idea", ja: "考え方", zh: "思路" };
const RUN_IT: Record<Lang, string> = { en: "Run it", ja: "動かしてみる", zh: "运行一下" };

/** A README section's body by its heading ("" when the README has no such section). */
function sectionBody(readme: Readme, heading: string): string {
  return readme.sections.find((s) => s.heading === heading)?.body ?? "";
}

/** The first paragraph of "The idea": what a chapter adds, in one paragraph per language. */
function ideaOf(build: Build, info: ChapterInfo): string {
  const dir = `chapters/${info.chapter.folder}`;
  return multilingual((lang) =>
    markdown(firstParagraph(sectionBody(info.readmes[lang], IDEA[lang])), build.ctx(dir, lang)),
  );
}

function pairLink(before: Chapter, after: Chapter): string {
  return `<a href="${before.id}-${after.id}.html">${t("diff", "差分", "差异")} ${before.id} → ${after.id}</a>`;
}

function indexPage(build: Build): string {
  const top = Object.fromEntries(
    LANGS.map((lang) => [lang, readReadme(path.join(build.root, LANGUAGE[lang].readme))]),
  ) as Record<Lang, Readme>;
  const timeline = build.infos.map((info, i) => {
    const { chapter } = info;
    const before = build.infos[i - 1]?.chapter;
    const pair = before ? ` · ${pairLink(before, chapter)}` : "";
    return (
      `<li class="chapter" id="t-${chapter.id}"><div class="when">${chapter.id}</div>` +
      `<div class="what"><h3><a href="${chapter.id}.html">${titles(info)}</a></h3>` +
      `${ideaOf(build, info)}<p class="meta">${statsLine(info.stats)}${pair}</p></div></li>`
    );
  });
  const about = multilingual((lang) => markdown(top[lang].body, build.ctx("", lang)));
  return page(
    top.en.title,
    `<h1>${t(esc(top.en.title), esc(top.ja.title), esc(top.zh.title))}</h1>\n` +
      section(
        "timeline",
        ["Chapters", "章", "章节"],
        `<ol class="timeline">${timeline.join("\n")}</ol>`,
      ) +
      section("about", ["About the course", "このコースについて", "关于本课程"], about),
    `<a href="index.html">${COURSE}</a>`,
  );
}

/** The chapter's src/ files: new and changed ones marked, the rest linked to where they last changed. */
function fileList(build: Build, at: number, changes: readonly FileChange[]): string {
  const info = build.infos[at]!;
  const status = new Map(changes.map((c) => [c.path, c]));
  const items = listFiles(info.chapter.dir)
    .filter((rel) => rel.startsWith("src/"))
    .map((rel) => {
      const change = status.get(rel);
      const lines = splitLines(readText(info.chapter.dir, rel)).length;
      let cls = "same";
      let note = "";
      if (change !== undefined) {
        cls = change.status === "added" ? "added" : "changed";
        const what =
          change.status === "added" ? t("new", "新規", "新增") : t("changed", "変更", "修改");
        note = `<a href="#${diffAnchor(rel)}">${what} <span class="plus">+${change.added}</span> <span class="minus">−${change.removed}</span></a>`;
      } else {
        const owner = lastChanged(build.infos, at, rel);
        if (owner && owner !== info) {
          note = `${t("as in", "変更なし:", "同")} <a href="${owner.chapter.id}.html#${diffAnchor(rel)}">${owner.chapter.id}</a>`;
        }
      }
      return `<li class="${cls}" id="${fileAnchor(rel)}"><code>${esc(rel)}</code> <span class="lines">${lines}</span> ${note}</li>`;
    });
  return `<ul class="files">${items.join("\n")}</ul>`;
}

function demoSection(
  chapter: Chapter,
  trace: DemoTrace,
  steps: string,
  tally: Map<string, number>,
) {
  const legend = (MARKS[chapter.id] ?? []).map(
    (m) => `<li><span class="mark-label">${esc(m.label)}</span> ${tally.get(m.label) ?? 0}×</li>`,
  );
  const n = trace.steps.length;
  const intro = multilingual(
    (lang) =>
      ({
        en: `<p>The build ran this chapter's offline demo (<code>pnpm --filter ${chapter.id} demo</code>) through the chapter's own code and read its session log: ${n} requests, each as the model received it and with the reply the log recorded. Parts marked in colour are what ${chapter.id} added; a card with a mark is open.</p>`,
        ja: `<p>サイトの生成時にこの章のオフラインデモ（<code>pnpm --filter ${chapter.id} demo</code>）を章自身のコードで実行し、そのセッションログを読み込みました。リクエストは ${n} 件で、それぞれモデルが受け取った内容と、ログに残った応答をそのまま示します。色付きの部分が ${chapter.id} で加わったもので、印のあるカードは開いた状態で表示します。</p>`,
        zh: `<p>生成网站时，用本章自己的代码运行了它的离线演示（<code>pnpm --filter ${chapter.id} demo</code>），并读取了会话日志：共 ${n} 个请求。每个请求都按模型收到的样子展示，附上日志记下的回复。带颜色的部分是 ${chapter.id} 新加的；带标记的卡片默认展开。</p>`,
      })[lang],
  );
  const terminal = `<details class="terminal"><summary>${t("What the terminal showed", "ターミナルの表示", "终端里显示的内容")}</summary><pre>${esc(trace.output)}</pre></details>`;
  return `${intro}<ul class="legend">${legend.join("")}</ul>${terminal}\n${steps}`;
}

const TOC: Array<[string, string]> = [
  ["diagram", t("Diagram", "図", "示意图")],
  ["run", t(RUN_IT.en, RUN_IT.ja, RUN_IT.zh)],
  ["files", t("Files", "ファイル", "文件")],
  ["demo", t("The demo, request by request", "デモのリクエスト", "逐个请求看演示")],
  ["diff", t("Diff", "差分", "差异")],
  ["readme", "README"],
];

function chapterPage(
  build: Build,
  at: number,
  trace: DemoTrace,
  demo: { html: string; tally: Map<string, number> },
): string {
  const info = build.infos[at]!;
  const { chapter, readmes } = info;
  const prev = build.infos[at - 1]?.chapter ?? null;
  const dir = `chapters/${chapter.folder}`;
  const fenced = (markdownText: string) => {
    const f = firstFence(markdownText);
    return f === null ? "" : markdown(`\`\`\`${f.lang}\n${f.code}\`\`\``, build.ctx(dir, "en"));
  };
  // The diagram in each language; one block when they are all the same.
  const diagrams = LANGS.map((lang) => fenced(sectionBody(readmes[lang], IDEA[lang])));
  const diagram = diagrams.every((d) => d === diagrams[0])
    ? (diagrams[0] ?? "")
    : multilingual((lang) => diagrams[LANGS.indexOf(lang)] ?? "");
  const changes = mechanismFirst(compareChapters(prev, chapter));
  const readme = multilingual(
    (lang) =>
      `<article class="readme">${markdown(readmes[lang].body, build.ctx(dir, lang))}</article>`,
  );
  const body = [
    `<h1>${chapter.id}: ${titles(info)}</h1>`,
    `<p class="meta">${statsLine(info.stats)}${prev ? ` · ${pairLink(prev, chapter)}` : ""}</p>`,
    ideaOf(build, info),
    `<nav class="toc">${TOC.map(([id, label]) => `<a href="#${id}">${label}</a>`).join(" ")}</nav>`,
    section("diagram", ["Diagram", "図", "示意图"], diagram),
    section("run", [RUN_IT.en, RUN_IT.ja, RUN_IT.zh], fenced(sectionBody(readmes.en, RUN_IT.en))),
    section(
      "files",
      ["src/ files", "src/ のファイル", "src/ 下的文件"],
      fileList(build, at, changes),
    ),
    section(
      "demo",
      ["The demo, request by request", "デモをリクエストごとに", "逐个请求看演示"],
      demoSection(chapter, trace, demo.html, demo.tally),
    ),
    section(
      "diff",
      prev
        ? [`Diff against ${prev.id}`, `${prev.id} との差分`, `与 ${prev.id} 的差异`]
        : ["Every file (the first chapter)", "すべてのファイル（最初の章）", "全部文件（第一章）"],
      renderDiff(prev, chapter, changes),
    ),
    section("readme", ["README", "README", "README"], readme),
  ].join("\n");
  return page(`${chapter.id}: ${readmes.en.title}`, body, chapterNav(build.infos, at));
}

/** What the later chapter's README says changed, and the diff of every file. */
function pairPage(build: Build, before: ChapterInfo, info: ChapterInfo): string {
  const { chapter, readmes } = info;
  const dir = `chapters/${chapter.folder}`;
  const id = before.chapter.id;
  const heading: Record<Lang, string> = {
    en: `What changed from ${id}`,
    ja: `${id} からの変更点`,
    zh: `相对 ${id} 的变化`,
  };
  const changed = multilingual((lang) =>
    markdown(sectionBody(readmes[lang], heading[lang]), build.ctx(dir, lang)),
  );
  const all = mechanismFirst(compareChapters(before.chapter, chapter, true));
  const body = [
    `<h1>${id} ${titles(before)} → ${chapter.id} ${titles(info)}</h1>`,
    `<p class="meta">${statsLine(info.stats)} · <a href="${id}.html">${id}</a> · <a href="${chapter.id}.html">${chapter.id}</a></p>`,
    section("changed", [heading.en, heading.ja, heading.zh], changed),
    section(
      "diff",
      ["Every file that differs", "違いのあるすべてのファイル", "所有不同的文件"],
      renderDiff(before.chapter, chapter, all),
    ),
  ].join("\n");
  const nav = `<a href="index.html">${COURSE}</a> <a href="index.html#t-${chapter.id}">${t("Timeline", "年表", "时间线")}</a>`;
  return page(`${before.chapter.id} → ${chapter.id}`, body, nav);
}

/** An exercise's statement, in every language, with the way back to its chapter. */
function exercisePage(build: Build, exercise: Exercise): string {
  const dir = path.relative(build.root, exercise.dir);
  const statement = (lang: Lang) => readReadme(path.join(exercise.dir, LANGUAGE[lang].readme));
  const info = build.infos.find((i) => i.chapter.id === exercise.chapter);
  const chapterLink = info
    ? `<a href="${info.chapter.id}.html#en-exercises">${info.chapter.id} ${titles(info)}</a>`
    : "";
  const title = (lang: Lang) => esc(statement(lang).title.replace(/^s\d\d\.\d+: /, ""));
  const body =
    `<h1>${esc(exercise.id)}: ${t(title("en"), title("ja"), title("zh"))}</h1>\n` +
    `<p class="meta">${chapterLink} · <code>pnpm course exercise start ${esc(exercise.id)}</code></p>\n` +
    multilingual((lang) => markdown(statement(lang).body, build.ctx(dir, lang)));
  const nav = `<a href="index.html">${COURSE}</a>${info ? ` <a href="${info.chapter.id}.html">${info.chapter.id}</a>` : ""}`;
  return page(`${exercise.id}: ${exercise.title}`, body, nav);
}

export async function buildSite(options: SiteOptions): Promise<SiteReport> {
  const { root } = options;
  const out = path.resolve(options.out);
  const say = options.say ?? (() => {});
  prepareOut(out);
  const chapters = listChapters(root);
  const stats = computeStats(root);
  const images = new Map<string, string>();
  const build: Build = {
    root,
    infos: chapters.map((chapter, i) => ({
      chapter,
      readmes: Object.fromEntries(
        LANGS.map((lang) => [lang, readReadme(path.join(chapter.dir, LANGUAGE[lang].readme))]),
      ) as Record<Lang, Readme>,
      stats: stats[i]!,
    })),
    ctx: (dir, lang) => ({ root, dir, lang, chapters, images }),
  };
  const report: SiteReport = { pages: [], marks: {}, requests: {} };
  const write = (name: string, html: string) => {
    fs.writeFileSync(path.join(out, name), html);
    report.pages.push(name);
  };

  let traces = options.traces;
  if (traces === undefined) {
    say(`site: running ${chapters.length} demos`);
    traces = await Promise.all(
      chapters.map((c) =>
        traceDemo(c.dir).catch((error: unknown) => {
          const why = error instanceof Error ? error.message : String(error);
          throw new CourseError(`the ${c.id} demo failed, so its page cannot show it: ${why}`, 1);
        }),
      ),
    );
  }
  if (traces.length !== chapters.length) {
    throw new Error(`${traces.length} demo runs for ${chapters.length} chapters`);
  }
  write("index.html", indexPage(build));

  // Chapter pages in order: each knows what earlier chapters' demos already sent.
  say("site: chapter pages");
  const seen: Seen = emptySeen();
  build.infos.forEach((info, at) => {
    const trace = traces[at]!;
    const demo = renderSteps(info.chapter.id, trace.steps, seen);
    remember(seen, trace.steps);
    report.marks[info.chapter.id] = Object.fromEntries(demo.tally);
    report.requests[info.chapter.id] = trace.steps.length;
    write(`${info.chapter.id}.html`, chapterPage(build, at, trace, demo));
  });

  say("site: chapter pairs");
  build.infos.slice(1).forEach((info, j) => {
    const before = build.infos[j]!;
    write(`${before.chapter.id}-${info.chapter.id}.html`, pairPage(build, before, info));
  });

  say("site: exercises");
  for (const exercise of listExercises(root))
    write(`${exercise.id}.html`, exercisePage(build, exercise));

  for (const name of ["style.css", "site.js"]) {
    fs.copyFileSync(path.join(ASSETS, name), path.join(out, name));
  }
  if (images.size > 0) {
    fs.mkdirSync(path.join(out, "img"), { recursive: true });
    for (const [source, name] of images) fs.copyFileSync(source, path.join(out, "img", name));
  }
  fs.writeFileSync(path.join(out, SITE_MARKER), `${JSON.stringify(report, null, 2)}\n`);
  say(`site: ${report.pages.length} pages in ${out}`);
  return report;
}

/** The site goes into an empty folder or one an earlier build made; anything else is kept. */
function prepareOut(out: string): void {
  if (existsSync(out)) {
    if (!fs.statSync(out).isDirectory()) throw new CourseError(`${out} is a file, not a folder`, 1);
    const entries = readdirSync(out);
    if (entries.length > 0 && !entries.includes(SITE_MARKER)) {
      throw new CourseError(
        `${out} is not empty and was not made by \`course site\`; choose another --out`,
        1,
      );
    }
    fs.rmSync(out, { recursive: true, force: true });
  }
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(
    path.join(out, SITE_MARKER),
    "Made by `pnpm course site`; the next build replaces this folder.\n",
  );
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

/** A static file server for `--serve`, on 127.0.0.1 only. */
export function serveSite(
  dir: string,
  port: number,
): Promise<{ url: string; close: () => Promise<void> }> {
  const base = path.resolve(dir);
  const server = http.createServer((req, res) => {
    let rel: string;
    try {
      rel = decodeURIComponent(new URL(req.url ?? "/", "http://localhost").pathname);
    } catch {
      res.writeHead(400, { "content-type": "text/plain" }).end("bad request path\n");
      return;
    }
    rel = rel.replace(/\/$/, "/index.html");
    const file = path.join(base, path.normalize(rel));
    if (!file.startsWith(base + path.sep) || !existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const actual = typeof address === "object" && address ? address.port : port;
      resolve({
        url: `http://127.0.0.1:${actual}/`,
        close: () =>
          new Promise((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
