/**
 * Every chapter's offline demo, in-process and once: `start` with nothing configured
 * announces the demo and runs the whole script through the real loop, tools and SDK client
 * against the fake server (cli.test.ts starts s01's the way a learner does). The course site
 * (`pnpm course site`) is then built from these same runs, each request read back from the
 * demo's session log, and checked: its HTML, then in a real headless Chromium driven by
 * playwright-core. Without a browser those tests are skipped, and the run says so and why.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareChapters, computeStats, DEFAULT_ROOT, listChapters } from "../scripts/course.ts";
import { listExercises } from "../scripts/exercise.ts";
import { buildSite, type SiteReport } from "../scripts/site.ts";
import { type DemoTrace, esc, MARKS, traceDemo } from "../scripts/site-demo.ts";
import { CHAPTERS, type Chapter, chapterDir, chaptersFrom } from "./chapters.ts";
import { tempWorkspace } from "./helpers/run.ts";

/** Each chapter's demo runs once; its test and the site both read the run. */
const runs = new Map<string, Promise<DemoTrace>>();
function demoRun(chapter: Chapter): Promise<DemoTrace> {
  let run = runs.get(chapter.id);
  if (run === undefined) {
    run = traceDemo(chapterDir(chapter), { input: "this line is ignored\n" });
    runs.set(chapter.id, run);
  }
  return run;
}

/**
 * What each demo must show: text that appears only if the chapter's own mechanism ran,
 * and pairs (earlier, later) whose order on screen follows the order of events. A new
 * chapter adds its entry; the test fails for a chapter without one.
 */
const SHOWS: Record<string, { contains: string[]; order?: Array<[string, string]> }> = {
  s01: {
    contains: [
      "[sent to the model] request 2 ends with one user message: a tool_result per tool_use_id",
      '  |       "tool_use_id": "toolu_01Scripted00000000000002",',
    ],
  },
  s02: {
    contains: ["  Edited notes/todo.md", "  Error: Path escapes workspace: ../../etc/passwd"],
  },
  s03: {
    contains: ["[allowed] by allow rule Bash(rm -rf build/cache:*) in .claude/settings.json"],
  },
  s04: {
    contains: ["[hook] PreToolUse (node .claude/hooks/protect-env.mjs) blocked:"],
    order: [["please set DEBUG=1 yourself.", "asks to continue: Before you finish"]],
  },
  s05: { contains: ["[todo] 3 tool rounds without a todo update: reminding the model"] },
  s06: { contains: ["  [sub] > glob(", "[Subagent done]"] },
  s07: { contains: ['> load_skill({"name":"code-review"})'] },
  s08: {
    contains: ["It runs with: L3_COMPACT_PERSIST_THRESHOLD=4000", "  | <persisted-output>"],
    order: [
      ["[compact L3]", "[compact L2]"],
      ["[compact L2]", "[compact L1]"],
      ["[compact L1]", "[compact L4] auto summary"],
      ["[compact L4] auto summary", "[compact L4] /compact summary"],
      ["[compact L4] /compact summary", "[compact reactive]"],
    ],
  },
  s09: {
    contains: ["  | Relevant memory records:", '  |     "source": "short-answers.md",'],
    order: [["Noted: short answers from now on", "[memory] stored 1 record(s)"]],
  },
  s10: {
    contains: [
      "[sent to the model] the create_task results: the IDs exist only now",
      "  [claim] setup database schema -> in_progress (owner: agent)",
      "  Unblocked: ",
    ],
    order: [
      ["[sent to the model] the create_task results", "> update_task("],
      ["[complete] setup database schema", "[unblocked] "],
      ["[unblocked] ", "completed: 1"],
    ],
  },
  s11: {
    contains: [
      "  [Background task bg_0001 started] The result will be collected on a later turn.",
      "  | [text] <task_notification>",
      "bg_0001  completed",
    ],
    order: [
      ["  [background] started bg_0001", "> read_file("],
      ["  4 notes.md", "  [background] collected bg_0001: completed"],
      ["  | [tool_result ", "  | [text] <task_notification>"],
    ],
  },
  s12: {
    contains: [
      "  | Current local time: 2026-03-02 08:59 (Monday, ",
      "  | [text] [Scheduled] Time to stretch: stand up, roll your shoulders",
      "[one-shot, durable]",
      "  No cron jobs.",
    ],
    order: [
      ["  [cron] scheduled cron_", "s12 >> What is scheduled?"],
      ["  [cron] due cron_", "  [cron] delivered cron_"],
      ["One job: the stretch reminder", "  [cron] delivered cron_"],
      ["  [cron] delivered cron_", "  | [text] [Scheduled] Time to stretch"],
      ["  | [text] [Scheduled] Time to stretch", "  No cron jobs."],
    ],
  },
  s13: {
    contains: [
      "  [teammate] alice spawned as writer",
      "  [teammate] bob spawned as writer",
      "  | [Team events]",
      "  [bob] > submit_plan(",
      "  Plan rejected (req_",
      "  Plan approved (req_",
      "  [bus] alice -> lead: (result) hello.txt written.",
      "[wake: ",
      "  [bob]   Unblocked: write index.txt",
      "  [bus] alice -> lead: (shutdown_response) Shutdown acknowledged.",
      "  [bus] bob -> lead: (shutdown_response) Shutdown acknowledged.",
      "[all teammates shut down]",
    ],
    order: [
      ["  [teammate] bob spawned as writer", "[wake: "],
      ["  Plan rejected (req_", "  Plan approved (req_"],
      ["  Plan approved (req_", "  [bob] > write_file("],
      ["  [bob]   Unblocked: write index.txt", " claimed task_"],
      [" claimed task_", "(shutdown_request)"],
      ["  [teammate] bob finished", "[all teammates shut down]"],
    ],
  },
  s14: {
    contains: [
      "  [mcp] connected docs (modern 2026-07-28, 2 tools): search, get_version",
      "  | tools (28): … create_worktree, connect_mcp, mcp__docs__search, mcp__docs__get_version",
      "  | system prompt, last line: Connected MCP servers: docs",
      "  [docs] Found 3 results for 'agent hooks'",
      "  [mcp] connected deploy (legacy 2025-11-25, 2 tools): trigger, status",
      "[denied] Permission denied: approval needed (MCP tool mcp__deploy__trigger) but stdin is not a terminal",
      "deploy: connected (stdio, legacy 2025-11-25): mcp__deploy__trigger, mcp__deploy__status",
    ],
    order: [
      ["  [mcp] connected docs", "  | tools (28)"],
      ["  | tools (28)", "> mcp__docs__search("],
      ["  [deploy] web: running (v1.4.2)", "[denied] Permission denied"],
      ["[denied] Permission denied", "s14 >> /mcp"],
    ],
  },
  s15: {
    contains: [
      "[retry] overloaded (529); attempt 2 of 4 in 1.0 s",
      "[fallback] 2 overloaded answers in a row: the rest of this turn uses claude-haiku-4-5",
      "This answer is cut off m\n[retry] the stream ended before the answer did; attempt 2 of 4 in ",
      "This turn started on MODEL_ID again.",
      "[max_tokens] the reply hit 8000 tokens: asking again with 16000",
    ],
    order: [
      ["[fallback] 2 overloaded", "  | claude-haiku-4-5"],
      ["[retry] the stream ended", "The release is on Friday, and"],
      ["s15 >> And which model answers now?", "  | claude-sonnet-4-6"],
      ["[max_tokens] the reply hit 8000", "  | 16000"],
    ],
  },
  s16: {
    contains: [
      "  event      task_started       workflow=review-changes phases=Review,Verify resume=false",
      "  progress   workflow_agent   label=audit:security phase=Review status=done",
      "  progress   workflow_log     message=confirmed 2 real finding(s)",
      "  event      task_started       workflow=review-changes phases=Review,Verify resume=true",
      "  progress   workflow_agent   label=audit:security phase=Review status=cached",
      "status=completed agents=0 tokens=0",
    ],
    order: [
      ["status=done", "Two confirmed findings"],
      ["Two confirmed findings", "status=cached"],
      ["status=cached", "status=completed agents=0 tokens=0"],
    ],
  },
  s17: {
    contains: [
      "[goal] set: tests/smoke.sh prints OK",
      "[goal] block: the conversation shows no output of tests/smoke.sh",
      "[goal] block: tests/smoke.sh printed NOT OK and exited with status 1",
      "[goal] achieved: tests/smoke.sh printed OK",
      "Goal achieved: tests/smoke.sh prints OK\nReason: tests/smoke.sh printed OK",
    ],
    order: [
      ["[goal] block: the conversation", "NOT OK"],
      ["[goal] block: tests/smoke.sh printed NOT OK", "[goal] achieved"],
      ["[goal] achieved", "s17 >> /goal\nGoal achieved"],
    ],
  },
};

/** Lines only an earlier chapter's demo should show, and the first chapter that drops them. */
const CHATTER: Array<{ line: RegExp; from: string }> = [
  { line: /^\[hook\] \w+\(\w+Hook\)/m, from: "s05" },
  { line: /^\[todo\]/m, from: "s06" },
  { line: /^\[skills\]/m, from: "s08" },
];

describe.concurrent.each(chaptersFrom("s01"))("$id offline demo", (chapter) => {
  it("runs when no key, token or base URL is configured, and finishes its script", async () => {
    // traceDemo calls the chapter's main with only PATH, HOME and NO_COLOR set, and throws
    // unless it exits 0; it reads the session log back and removes the workspace.
    const trace = await demoRun(chapter);
    const out = trace.output;
    expect(out).toContain("No model configured: running this chapter's offline demo.");
    expect(out).toContain(`Offline demo (${chapter.id})`);
    expect(out).toContain(`${chapter.id}: ${chapter.title}`);
    expect(out).not.toMatch(/API error|scripted model: no step left|connection error/);
    expect(out).not.toContain("this line is ignored");
    const shows = SHOWS[chapter.id];
    expect(shows, `SHOWS has no entry for ${chapter.id}`).toBeDefined();
    for (const line of shows!.contains) expect(out).toContain(line);
    for (const [earlier, later] of shows!.order ?? []) {
      expect(out.indexOf(earlier), earlier).toBeGreaterThanOrEqual(0);
      expect(out.indexOf(later), `${later} after ${earlier}`).toBeGreaterThan(out.indexOf(earlier));
    }
    const n = Number(chapter.id.slice(1));
    for (const { line, from } of CHATTER) {
      if (n >= Number(from.slice(1))) expect(out).not.toMatch(line);
    }
    // A prompt appears only with the line it answers: none is left waiting at the end.
    expect(out).not.toMatch(new RegExp(`${chapter.id} >> \\n`));
    expect(out).toContain("Demo finished. Its workspace is kept at <workspace>");
    expect(trace.steps.length, "requests read back from the session log").toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------
// The course site, built from these runs

const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), "output");
const out = tempWorkspace("site");
let report: SiteReport;
const html = (name: string) => readFileSync(path.join(out, name), "utf8");
let built: Promise<SiteReport> | undefined;

/** The site, built once from the demo runs above; each suite that reads it waits for it. */
async function buildOnce(): Promise<void> {
  built ??= Promise.all(CHAPTERS.map(demoRun)).then((traces) =>
    buildSite({ root: DEFAULT_ROOT, out, traces }),
  );
  report = await built;
}

/** The text of a page's element with this id, tags dropped (enough for these checks). */
function sectionText(page: string, id: string): string {
  const start = page.indexOf(`<section id="${id}">`);
  expect(start, `section ${id}`).toBeGreaterThanOrEqual(0);
  return page.slice(start, page.indexOf("</section>", start));
}

describe("course site: the pages", () => {
  beforeAll(buildOnce, 60_000);

  it("writes an index, a page per chapter, per chapter pair and per exercise", () => {
    const ids = CHAPTERS.map((c) => c.id);
    const pairs = ids.slice(1).map((id, i) => `${ids[i]}-${id}.html`);
    const exercises = listExercises(DEFAULT_ROOT).map((exercise) => `${exercise.id}.html`);
    expect(report.pages.sort()).toEqual(
      ["index.html", ...ids.map((id) => `${id}.html`), ...pairs, ...exercises].sort(),
    );
    // An exercise's page has its statement in every language and leads back to its chapter.
    const grep = html("s02.1.html");
    expect(grep).toContain('<h1>s02.1: <span class="en">A grep tool with a path target</span>');
    expect(grep).toContain('href="s02.html#en-exercises"');
    expect(grep).toContain("正規表現でファイルの中身を検索し");
    expect(grep).toContain('<div class="zh" lang="zh-Hans">');
    expect(html("s02.html")).toContain('href="s02.1.html"');
    expect(existsSync(path.join(out, "style.css")) && existsSync(path.join(out, "site.js"))).toBe(
      true,
    );
  });

  it("shows the timeline in chapter order with each chapter's +/- stats and pair link", () => {
    const index = html("index.html");
    const stats = computeStats(DEFAULT_ROOT);
    let at = 0;
    for (const [i, s] of stats.entries()) {
      const item = index.indexOf(`<li class="chapter" id="t-${s.id}">`);
      expect(item, s.id).toBeGreaterThan(at);
      at = item;
      const entry = index.slice(item, index.indexOf("</li>", item));
      expect(entry).toContain(`+${s.linesAdded}</span> <span class="minus">−${s.linesRemoved}`);
      expect(entry).toContain(`href="${s.id}.html"`);
      if (i > 0) expect(entry).toContain(`href="${stats[i - 1]!.id}-${s.id}.html"`);
    }
    // The top README in every language, and the chapter's idea paragraph from its README.
    expect(index).toContain('<div class="ja" lang="ja">');
    expect(index).toContain('<div class="zh" lang="zh-Hans">');
    expect(index).toContain("Put a loop around the model:");
    // Each chapter's title in each language: s02 as 工具调用 for a Chinese reader.
    expect(index).toContain('<span class="zh" lang="zh-Hans">工具调用 (Tool Use)</span>');
  });

  it("gives s05 its diagram, run commands, file list, diff and README in every language", () => {
    const page = html("s05.html");
    expect(sectionText(page, "diagram")).toContain(
      "&lt;reminder&gt;Update your todos.&lt;/reminder&gt;",
    );
    expect(sectionText(page, "run")).toContain("--filter s05 demo");
    const files = sectionText(page, "files");
    expect(files).toMatch(/<li class="added" id="file-src-todo-ts"><code>src\/todo\.ts<\/code>/);
    expect(files).toMatch(
      /<li class="same" id="file-src-loop-ts">.*href="s04\.html#diff-src-loop-ts"/,
    );
    const diff = sectionText(page, "diff");
    // The new mechanism's file comes first, open, with its lines as insertions.
    expect(diff.indexOf('id="diff-src-todo-ts"')).toBeLessThan(
      diff.indexOf('<details class="file" id="diff-src-main-ts"'),
    );
    expect(diff).toMatch(
      /<details class="file" id="diff-src-todo-ts" open><summary><span class="path">src\/todo\.ts<\/span> <span class="status added">new<\/span>/,
    );
    // A new file is one numbered, highlighted block; a changed one is a side-by-side table.
    expect(diff).toMatch(
      /id="diff-src-todo-ts" open>.*?<div class="whole ins">.*?<pre class="code"><code>.*?<span class="hljs-keyword">export<\/span>/s,
    );
    expect(diff).toMatch(
      /id="diff-src-main-ts" open>.*?<table class="diff">.*?<td class="code ins">/s,
    );
    const readme = sectionText(page, "readme");
    expect(readme).toContain('<h2 id="en-the-idea">The idea</h2>');
    expect(readme).toContain('<h2 id="ja-考え方">考え方</h2>');
    expect(readme).toContain('<h2 id="zh-思路">思路</h2>');
    // README links become site links: the next chapter, the course overview's sections.
    expect(readme).toContain('href="s06.html"');
    expect(sectionText(html("s16.html"), "readme")).toContain('href="index.html#en-configuration"');
  });

  it("gives every chapter its diagram and run commands, and every pair what changed", () => {
    for (const [i, { id }] of CHAPTERS.entries()) {
      const page = html(`${id}.html`);
      expect(sectionText(page, "diagram"), id).toContain('<pre class="code">');
      expect(sectionText(page, "run"), id).toContain(`--filter ${id} start`);
      if (i === 0) continue;
      const before = CHAPTERS[i - 1]!.id;
      const changed = sectionText(html(`${before}-${id}.html`), "changed");
      expect(changed, `${before}-${id}`).toContain(`What changed from ${before}`);
      expect(changed.length, `${before}-${id}`).toBeGreaterThan(600);
    }
  });

  it("resolves every link and image on every page, anchors included", () => {
    const ids = new Map<string, Set<string>>();
    for (const name of report.pages) {
      ids.set(name, new Set([...html(name).matchAll(/ id="([^"]+)"/g)].map((m) => m[1]!)));
    }
    const broken: string[] = [];
    for (const name of report.pages) {
      for (const [, attr, raw] of html(name).matchAll(/ (href|src)="([^"]*)"/g)) {
        const value = raw!.replace(/&amp;/g, "&");
        if (/^(https?:|mailto:|data:)/.test(value)) continue;
        const [file = "", hash] = value.split("#");
        const target = file === "" ? name : file;
        if (!existsSync(path.join(out, target))) broken.push(`${name}: ${attr} ${value}`);
        else if (
          hash &&
          !["ja", "zh"].includes(hash) &&
          !ids.get(target)?.has(decodeURIComponent(hash))
        ) {
          broken.push(`${name}: #${hash} is not in ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("writes well-formed HTML: every element closed, in order, on every page", () => {
    const VOID = new Set(["meta", "link", "img", "br", "hr", "col", "input"]);
    const problems: string[] = [];
    for (const name of report.pages) {
      const open: string[] = [];
      for (const [, close, tag] of html(name).matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*>/g)) {
        const t = tag!.toLowerCase();
        if (VOID.has(t)) continue;
        if (close === "") open.push(t);
        else if (open.pop() !== t) {
          problems.push(`${name}: </${t}> closes something else`);
          break;
        }
      }
      if (open.length > 0 && problems.length === 0)
        problems.push(`${name}: <${open.pop()}> never closed`);
    }
    expect(problems).toEqual([]);
    // Text in a README that looks like a tag is shown as text, not swallowed as markup.
    expect(html("s14.html")).not.toMatch(/<server>|<tool>/);
  });

  it("copies the README images it shows", () => {
    const index = html("index.html");
    const img = /<img src="(img\/[^"]+)"/.exec(index)?.[1];
    expect(img).toBeDefined();
    expect(readFileSync(path.join(out, img!)).subarray(1, 4).toString()).toBe("PNG");
  });
});

describe("course site: each demo, request by request", () => {
  beforeAll(buildOnce, 60_000);

  it("shows every chapter's demo with each of its marks at least once", () => {
    const missing: string[] = [];
    for (const { id } of CHAPTERS) {
      expect(report.requests[id], id).toBeGreaterThan(0);
      for (const mark of MARKS[id] ?? []) {
        if (!(report.marks[id]?.[mark.label] ?? 0)) missing.push(`${id}: ${mark.label}`);
      }
      expect(MARKS[id]?.length, `MARKS has no entry for ${id}`).toBeGreaterThan(0);
    }
    expect(missing).toEqual([]);
  });

  /** The HTML of the step cards whose mark has this label, with the mark's own text. */
  const marked = (page: string, label: string) =>
    [
      ...html(page).matchAll(
        /<details class="step has-mark" id="step-(\d+)" open>([\s\S]*?)<\/details>\n/g,
      ),
    ]
      .filter((m) => m[2]!.includes(`<span class="mark-label">${esc(label)}</span>`))
      .map((m) => ({ n: Number(m[1]), body: m[2]! }));

  it("s05: marks the reminder the harness added after that round's tool results", () => {
    const [card] = marked("s05.html", "the todo reminder the harness attached");
    expect(card).toBeDefined();
    const result = card!.body.indexOf('<span class="kind">tool_result</span>');
    const reminder = card!.body.indexOf("&lt;reminder&gt;Update your todos.&lt;/reminder&gt;");
    expect(result).toBeGreaterThan(0);
    expect(reminder).toBeGreaterThan(result);
  });

  it("s08: marks the stub that replaced the large output", () => {
    const [card] = marked("s08.html", "a stub replaced the large output");
    expect(card!.body).toContain(
      "&lt;persisted-output&gt;\nFull output: &lt;workspace&gt;/.harness/",
    );
    // The cards show the workspace as <workspace>; the README's transcript shows a real run.
    expect(sectionText(html("s08.html"), "demo")).not.toMatch(/\/tmp\/harness-demo-/);
  });

  it("s09: marks the recalled memory section in the second session's system prompt", () => {
    const page = html("s09.html");
    expect(page).toContain("Session 2: the harness started again");
    const cards = marked("s09.html", "the recalled memory section");
    expect(cards.length).toBeGreaterThan(0);
    expect(cards[0]!.body).toMatch(
      /Relevant memory records:\n\[\n {2}\{\n {4}&quot;source&quot;: &quot;short-answers\.md&quot;/,
    );
    expect(page.indexOf("Session 2")).toBeLessThan(page.indexOf(`id="step-${cards[0]!.n}"`));
  });

  it("s11: marks the notification that arrived with the next tool results", () => {
    const [card] = marked("s11.html", "the background job's notification");
    expect(card!.body).toContain(
      "&lt;task_notification&gt;\n  &lt;task_id&gt;bg_0001&lt;/task_id&gt;",
    );
  });

  it("pairs each request with its reply or API error, retries included (s15)", () => {
    const page = html("s15.html");
    expect(page.match(/<div class="role">API error<\/div>/g)?.length).toBe(3);
    expect(page).toContain("same body as #1 → API error");
    expect(
      marked("s15.html", "the model changed: the fallback, or back to MODEL_ID")[0]!.body,
    ).toContain("&quot;claude-haiku-4-5&quot;");
    // Tools and system sections no earlier demo sent are marked as the chapter's own.
    expect(html("s05.html")).toMatch(
      /<span class="mark-label">new in s05: this system section<\/span><pre class="text">Planning: /,
    );
    expect(html("s06.html")).not.toMatch(
      /new in s06: this system section<\/span><pre class="text">Planning: /,
    );
    expect(html("s10.html")).toMatch(
      /<span class="mark-label">new in s10<\/span><code>create_task<\/code>/,
    );
    expect(html("s12.html")).not.toMatch(
      /<span class="mark-label">new in s12<\/span><code>create_task<\/code>/,
    );
  });
});

// ---------------------------------------------------------------------------
// In a real browser

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const browserMissing = existsSync(CHROMIUM)
  ? null
  : `no Chromium at ${CHROMIUM} (install Debian's chromium package, or set CHROMIUM_PATH)`;
if (browserMissing) {
  console.warn(`demo.test.ts: skipped the course site's browser tests: ${browserMissing}`);
}
/** Debian's fonts-noto-cjk: without it Chromium draws Chinese and Japanese as empty boxes. */
const CJK_FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc";
const fontMissing = existsSync(CJK_FONT)
  ? null
  : `no ${CJK_FONT} (install Debian's fonts-noto-cjk package)`;
if (fontMissing && !browserMissing) {
  console.warn(`demo.test.ts: skipped the Chinese font test: ${fontMissing}`);
}
/** The first heading of the Chinese top README (its "What this is"). */
const ZH_ABOUT = /^## (.+)$/m.exec(
  readFileSync(path.join(DEFAULT_ROOT, "README.zh.md"), "utf8"),
)?.[1];

describe.skipIf(browserMissing !== null)("course site: in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const url = (name: string) => pathToFileURL(path.join(out, name)).href;

  beforeAll(async () => {
    await buildOnce();
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // This machine's network is closed: without these Chromium keeps trying to reach out.
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`${page.url()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => errors.push(`${page.url()}: ${e.message}`));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("renders every chapter page without console errors, its new files in the diff", async () => {
    const chapters = listChapters(DEFAULT_ROOT);
    for (const [i, chapter] of chapters.entries()) {
      const added = compareChapters(chapters[i - 1] ?? null, chapter)
        .filter((c) => c.status === "added" && c.path.startsWith("src/"))
        .map((c) => `diff-${c.path.replace(/[/.]/g, "-").toLowerCase()}`);
      await page.goto(url(`${chapter.id}.html`));
      const seen = await page.evaluate(
        (ids) => ({
          // What is on screen: the title in the chosen language (English until one is chosen).
          // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point
          title: document.querySelector("h1")?.innerText,
          shown: ids.filter((id) => {
            const el = document.getElementById(id) as HTMLDetailsElement | null;
            return el?.open === true && el.getBoundingClientRect().height > 40;
          }),
          steps: document.querySelectorAll("#demo details.step").length,
        }),
        added,
      );
      expect(seen.title).toBe(`${chapter.id}: ${CHAPTERS[i]!.title}`);
      expect(seen.shown, chapter.id).toEqual(added);
      expect(seen.steps).toBe(report.requests[chapter.id]);
    }
    expect(errors).toEqual([]);
  });

  it("follows the timeline to a chapter pair and on to the chapter; screenshots the index", async () => {
    await page.goto(url("index.html"));
    mkdirSync(OUTPUT, { recursive: true });
    const shot = path.join(OUTPUT, "site-index.png");
    await page.screenshot({ path: shot });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe("PNG");
    await page.click('#t-s05 a[href="s04-s05.html"]');
    expect(page.url()).toBe(url("s04-s05.html"));
    // The titles in the language on screen: the others are hidden, not absent.
    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point
    expect(await page.locator("h1").innerText()).toBe("s04 Hooks → s05 TodoWrite");
    await page.click('main a[href="s05.html"]');
    expect(page.url()).toBe(url("s05.html"));
    expect(errors).toEqual([]);
  });

  describe("s05, as a reader uses it (one load)", () => {
    beforeAll(async () => {
      // The timeline test above ends on s05: the page is read where that left it.
      if (page.url() !== url("s05.html")) await page.goto(url("s05.html"));
    });

    it("writes a screenshot of the page to the test output", async () => {
      mkdirSync(OUTPUT, { recursive: true });
      const shot = path.join(OUTPUT, "site-s05.png");
      await page.screenshot({ path: shot });
      expect(readFileSync(shot).subarray(1, 4).toString()).toBe("PNG");
    });

    it("lands on the section a link names, just below the header, however long the page", async () => {
      const landed = async (id: string) => {
        const { top, header } = await page.evaluate(
          (at) => ({
            top: document.getElementById(at)!.getBoundingClientRect().top,
            header: document.querySelector("header.top")!.getBoundingClientRect().bottom,
          }),
          id,
        );
        expect(top, id).toBeGreaterThanOrEqual(header);
        expect(top, id).toBeLessThan(header + 40);
      };
      for (const id of ["readme", "diff", "demo"]) {
        await page.click(`nav.toc a[href="#${id}"]`);
        await landed(id);
      }
      await page.click('#files a[href="#diff-src-todo-ts"]');
      await landed("diff-src-todo-ts");
    });

    it("collapses and expands every diff file", async () => {
      const open = () => page.locator("#diff details.file[open]").count();
      const all = await page.locator("#diff details.file").count();
      expect(all).toBeGreaterThan(1);
      await page.click('#diff button[data-diff="collapse"]');
      expect(await open()).toBe(0);
      await page.click('#diff button[data-diff="expand"]');
      expect(await open()).toBe(all);
    });

    it("switches the README's language, and keeps the choice on the next page", async () => {
      // Which README in `section` is on screen (only one may be), and its first heading.
      const shown = async (section: string) => {
        const visible: string[] = [];
        for (const lang of ["en", "ja", "zh"]) {
          if (await page.locator(`#${section} > div.${lang}`).isVisible()) visible.push(lang);
        }
        const text = await page.locator(`#${section} > div.${visible[0]} h2`).first().textContent();
        return { visible, text };
      };
      expect(await shown("readme")).toEqual({ visible: ["en"], text: "The problem" });
      await page.click('button[data-lang="ja"]');
      expect(await shown("readme")).toEqual({ visible: ["ja"], text: "解決したい問題" });
      expect(await page.locator("html").getAttribute("lang")).toBe("ja");
      await page.click('button[data-lang="zh"]');
      expect(await shown("readme")).toEqual({ visible: ["zh"], text: "要解决的问题" });
      expect(await page.locator("html").getAttribute("lang")).toBe("zh-Hans");
      // biome-ignore lint/performance/useDomNodeTextContent: the title in the chosen language
      expect(await page.locator("h1").innerText()).toBe("s05: TodoWrite");
      await page.goto(url("index.html"));
      expect(await shown("about")).toEqual({ visible: ["zh"], text: ZH_ABOUT });
      await page.click('button[data-lang="en"]');
      expect(await shown("about")).toEqual({ visible: ["en"], text: "What this is" });
      // A link to README.ja.md (#ja) or README.zh.md (#zh) opens a page in that language,
      // whatever was chosen before.
      for (const [hash, lang] of [
        ["#ja", "ja"],
        ["#zh", "zh"],
        ["#zh-思路", "zh"],
      ]) {
        await page.goto("about:blank"); // so that the next load is a new document, not a scroll
        await page.goto(`${url(hash === "#zh-思路" ? "s05.html" : "index.html")}${hash}`);
        const section = hash === "#zh-思路" ? "readme" : "about";
        expect((await shown(section)).visible, hash).toEqual([lang]);
      }
      await page.click('button[data-lang="en"]');
    });
  });

  describe.skipIf(fontMissing !== null)("Chinese, as a Chinese reader sees it", () => {
    it("draws the Chinese README in a Chinese font, not the Japanese one; screenshots it", async () => {
      await page.goto("about:blank"); // a new document: #zh is read when a page loads
      await page.goto(`${url("s05.html")}#zh`);
      const heading = page.locator("#readme > div.zh h2").first();
      expect(await heading.textContent()).toBe("要解决的问题");
      // The fonts Chromium really drew the heading with (a missing font falls back silently).
      // DevTools' CSS domain reads the file: stylesheet again, which Chromium logs as an
      // "Unsafe attempt to load URL": that line is the probe's, not the page's.
      const before = errors.length;
      const cdp = await page.context().newCDPSession(page);
      await cdp.send("DOM.enable");
      await cdp.send("CSS.enable");
      const { root } = await cdp.send("DOM.getDocument");
      const { nodeId } = await cdp.send("DOM.querySelector", {
        nodeId: root.nodeId,
        selector: "#readme > div.zh h2",
      });
      const { fonts } = await cdp.send("CSS.getPlatformFontsForNode", { nodeId });
      await cdp.detach();
      const probe = errors.splice(before);
      expect(probe.every((e) => e.includes("Unsafe attempt to load URL"))).toBe(true);
      expect(fonts.map((f) => f.familyName)).toEqual(["Noto Sans CJK SC"]);
      mkdirSync(OUTPUT, { recursive: true });
      const shot = path.join(OUTPUT, "site-s05-zh.png");
      await page.screenshot({ path: shot });
      expect(readFileSync(shot).subarray(1, 4).toString()).toBe("PNG");
      await page.click('button[data-lang="en"]');
      expect(errors).toEqual([]);
    });
  });

  it("reads without JavaScript: every README, the open diff, no dead buttons", async () => {
    const plain = await browser.newContext({ javaScriptEnabled: false });
    try {
      const reader = await plain.newPage();
      await reader.goto(url("s06.html"));
      expect(await reader.locator("#readme > div.en").isVisible()).toBe(true);
      expect(await reader.locator("#readme > div.ja").isVisible()).toBe(true);
      expect(await reader.locator("#readme > div.zh").isVisible()).toBe(true);
      expect(await reader.locator("#diff-src-subagent-ts pre.code").isVisible()).toBe(true);
      expect(await reader.locator(".lang-switch").isVisible()).toBe(false);
      expect(await reader.locator("#diff .diff-tools").isVisible()).toBe(false);
    } finally {
      await plain.close();
    }
  });
});
