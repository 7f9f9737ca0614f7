/**
 * `pnpm course site`: the site is built once from the real repository (every chapter's demo
 * runs in this process), then its HTML is checked, and then it is read in a real headless
 * Chromium driven by playwright-core. Without a browser the browser tests are skipped, and
 * the run says so and why.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  compareChapters,
  computeStats,
  DEFAULT_ROOT,
  type Io,
  listChapters,
  main,
} from "../scripts/course.ts";
import {
  highlightLines,
  markdown,
  SITE_MARKER,
  type SiteReport,
  serveSite,
} from "../scripts/site.ts";
import { esc, MARKS, pairSteps } from "../scripts/site-demo.ts";
import { CHAPTERS } from "./chapters.ts";
import { TEST_TEMP } from "./helpers/run.ts";

const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), "output");
const out = mkdtempSync(path.join(TEST_TEMP, "course-site-"));
let report: SiteReport;
const html = (name: string) => readFileSync(path.join(out, name), "utf8");

beforeAll(async () => {
  // Through the command's own path, as `pnpm course site --out <dir>` runs it.
  const io = captureIo();
  expect(await main(["site", "--out", out], io)).toBe(0);
  expect(io.err).toBe("");
  expect(io.out).toContain(
    `site: 34 pages in ${out}\nOpen ${path.join(out, "index.html")} in a browser`,
  );
  report = JSON.parse(readFileSync(path.join(out, SITE_MARKER), "utf8")) as SiteReport;
}, 60_000);

function captureIo(): Io & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    color: false,
    write: (text: string) => {
      io.out += text;
    },
    error: (text: string) => {
      io.err += text;
    },
  };
  return io;
}

/** The text of a page's element with this id, tags dropped (enough for these checks). */
function sectionText(page: string, id: string): string {
  const start = page.indexOf(`<section id="${id}">`);
  expect(start, `section ${id}`).toBeGreaterThanOrEqual(0);
  return page.slice(start, page.indexOf("</section>", start));
}

describe("course site: the pages", () => {
  it("writes an index, a page per chapter and a page per chapter pair", () => {
    const ids = CHAPTERS.map((c) => c.id);
    const pairs = ids.slice(1).map((id, i) => `${ids[i]}-${id}.html`);
    expect(report.pages.sort()).toEqual(
      ["index.html", ...ids.map((id) => `${id}.html`), ...pairs].sort(),
    );
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
    // The top README in both languages, and the chapter's idea paragraph from its README.
    expect(index).toContain('<div class="ja" lang="ja">');
    expect(index).toContain("Put a loop around the model.");
  });

  it("gives s05 its diagram, run commands, file list, diff and README in both languages", () => {
    const page = html("s05.html");
    expect(sectionText(page, "diagram")).toContain(
      "&lt;reminder&gt;Update your todos.&lt;/reminder&gt;",
    );
    expect(sectionText(page, "run")).toContain("--filter s05 demo");
    const files = sectionText(page, "files");
    expect(files).toMatch(/<li class="added" id="file-src-todo-ts"><code>src\/todo\.ts<\/code>/);
    expect(files).toMatch(
      /<li class="same" id="file-src-bash-ts">.*href="s01\.html#diff-src-bash-ts"/,
    );
    const diff = sectionText(page, "diff");
    // The new mechanism's file comes first, open, with its lines as insertions.
    expect(diff.indexOf('id="diff-src-todo-ts"')).toBeLessThan(
      diff.indexOf('<details class="file" id="diff-src-main-ts"'),
    );
    expect(diff).toMatch(
      /<details class="file" id="diff-src-todo-ts" open><summary><span class="path">src\/todo\.ts<\/span> <span class="status added">new<\/span>/,
    );
    expect(diff).toContain('<td class="code ins"><span class="hljs-keyword">export</span>');
    const readme = sectionText(page, "readme");
    expect(readme).toContain('<h2 id="en-the-idea">The idea</h2>');
    expect(readme).toContain('<h2 id="ja-考え方">考え方</h2>');
    // README links become site links: the next chapter, the course overview's sections.
    expect(readme).toContain('href="s06.html"');
    expect(readme).toContain('href="index.html#en-configuration"');
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
        else if (hash && hash !== "ja" && !ids.get(target)?.has(decodeURIComponent(hash))) {
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
    expect(html("s08.html")).not.toMatch(/\/tmp\/harness-demo-/);
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

  it("pairs replies by scope in a log where two scopes interleave", () => {
    const rec = (kind: string, scope: string, data: unknown) =>
      JSON.stringify({ ts: "t", kind, scope, data });
    const request = (text: string) => ({
      model: "m",
      max_tokens: 1,
      system: null,
      tools: null,
      count: 1,
      keep: 0,
      messages: [{ role: "user", content: text }],
    });
    const log = [
      rec("request", "main", request("first")),
      rec("request", "sub", request("second")),
      rec("response", "sub", { content: [], model: "m", id: "b" }),
      rec("api_error", "main", { status: 529 }),
    ].join("\n");
    const steps = pairSteps(log);
    expect(steps.map((s) => [s.scope, s.outcome?.kind])).toEqual([
      ["main", "api_error"],
      ["sub", "response"],
    ]);
    expect(() => pairSteps(rec("request", "main", { ...request("x"), system: "abc" }))).toThrow(
      "line 1: no system abc",
    );
  });
});

describe("course site: the command", () => {
  it("refuses a folder it did not make, and leaves it as it was", async () => {
    const mine = mkdtempSync(path.join(TEST_TEMP, "course-site-mine-"));
    writeFileSync(path.join(mine, "notes.txt"), "keep me");
    const io = captureIo();
    expect(await main(["site", "--out", mine], io)).toBe(1);
    expect(io.err).toBe(
      `course site: ${mine} is not empty and was not made by \`course site\`; choose another --out\n`,
    );
    expect(readdirSync(mine)).toEqual(["notes.txt"]);
    expect(existsSync(path.join(out, SITE_MARKER))).toBe(true);
  });

  it("checks --port before building anything", async () => {
    for (const [args, message] of [
      [["--serve", "--port", "http"], '--port must be a number from 1 to 65535 (got "http")'],
      [["--serve", "--port", "70000"], '--port must be a number from 1 to 65535 (got "70000")'],
      [["--port", "8080"], "--port applies only with --serve"],
    ] as const) {
      const io = captureIo();
      expect(await main(["site", "--out", path.join(out, "never"), ...args], io)).toBe(2);
      expect(io.err).toBe(`course site: ${message}\n`);
    }
    expect(existsSync(path.join(out, "never"))).toBe(false);
  });

  it("says a busy port is busy, before building anything", async () => {
    const busy = await serveSite(out, 0);
    try {
      const port = new URL(busy.url).port;
      const io = captureIo();
      const never = path.join(out, "never");
      expect(await main(["site", "--serve", "--port", port, "--out", never], io)).toBe(1);
      expect(io.err).toBe(
        `course site: port ${port} is in use on 127.0.0.1; choose another with --port\n`,
      );
      expect(io.out).toBe("");
      expect(existsSync(never)).toBe(false);
    } finally {
      await busy.close();
    }
  });

  it("serves the folder on 127.0.0.1 and nothing outside it", async () => {
    const server = await serveSite(out, 0);
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const index = await fetch(server.url);
      expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await index.text()).toBe(html("index.html"));
      expect((await fetch(`${server.url}s05.html`)).status).toBe(200);
      expect((await fetch(`${server.url}..%2F..%2Fpackage.json`)).status).toBe(404);
      expect((await fetch(`${server.url}nothing.html`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it("turns README links into site links, and shows text that looks like a tag as text", () => {
    const ctx = {
      root: DEFAULT_ROOT,
      dir: "chapters/s05-todo",
      lang: "ja" as const,
      chapters: listChapters(DEFAULT_ROOT),
      images: new Map<string, string>(),
    };
    const page = markdown(
      [
        "[s06](../s06-subagent/README.md) [en](README.md) [ja](README.ja.md)",
        "[overview](../../README.md#configuration) [todo](src/todo.ts) [here](#the-idea)",
        "[gone](../../nowhere.md) [web](https://code.claude.com/docs)",
        "",
        "tools named mcp__<server>__<tool>",
      ].join("\n"),
      ctx,
    );
    for (const href of [
      "s06.html",
      "s05.html",
      "s05.html#ja",
      "index.html#en-configuration",
      "s05.html#file-src-todo-ts",
      "#ja-the-idea",
      "https://code.claude.com/docs",
    ]) {
      expect(page).toContain(`<a href="${href}">`);
    }
    expect(page).toContain(
      '<span class="repo-path" title="../../nowhere.md (in the repository)">gone</span>',
    );
    expect(page).toContain("tools named mcp__&lt;server&gt;__&lt;tool&gt;");
  });

  it("highlights each line on its own: spans open at a line's end close there", () => {
    const lines = highlightLines("/* one\n   two */\nconst s = `a\nb`;", "typescript");
    expect(lines).toHaveLength(4);
    for (const line of lines) {
      expect(line.match(/<span/g)?.length ?? 0, line).toBe(line.match(/<\/span>/g)?.length ?? 0);
    }
    expect(lines[1]).toBe('<span class="hljs-comment">   two */</span>');
  });
});

// ---------------------------------------------------------------------------
// In a real browser

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const browserMissing = existsSync(CHROMIUM)
  ? null
  : `no Chromium at ${CHROMIUM} (install Debian's chromium package, or set CHROMIUM_PATH)`;
if (browserMissing) {
  console.warn(`site.test.ts: skipped the browser tests: ${browserMissing}`);
}

describe.skipIf(browserMissing !== null)("course site: in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const url = (name: string) => pathToFileURL(path.join(out, name)).href;

  beforeAll(async () => {
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
  }, 30_000);

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
          title: document.querySelector("h1")?.textContent,
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

  it("switches the README's language, and keeps the choice on the next page", async () => {
    // Which README is on screen; its text is checked too (both are in the page).
    const shown = async () => {
      const en = await page.locator("#readme > div.en").isVisible();
      const ja = await page.locator("#readme > div.ja").isVisible();
      const text = await page
        .locator(`#readme > div.${ja ? "ja" : "en"} h2`)
        .first()
        .textContent();
      return { en, ja, text };
    };
    await page.goto(url("s05.html"));
    expect(await shown()).toEqual({ en: true, ja: false, text: "The problem" });
    await page.click('button[data-lang="ja"]');
    expect(await shown()).toEqual({ en: false, ja: true, text: "解決したい問題" });
    expect(await page.locator("html").getAttribute("lang")).toBe("ja");
    await page.goto(url("s06.html"));
    expect(await shown()).toEqual({ en: false, ja: true, text: "解決したい問題" });
    await page.click('button[data-lang="en"]');
    expect(await shown()).toEqual({ en: true, ja: false, text: "The problem" });
    // A link to README.ja.md opens the page in Japanese.
    await page.goto(`${url("s07.html")}#ja`);
    expect((await shown()).ja).toBe(true);
    await page.click('button[data-lang="en"]');
  });

  it("reads without JavaScript: both READMEs, the open diff, no dead buttons", async () => {
    const plain = await browser.newContext({ javaScriptEnabled: false });
    try {
      const reader = await plain.newPage();
      await reader.goto(url("s05.html"));
      expect(await reader.locator("#readme > div.en").isVisible()).toBe(true);
      expect(await reader.locator("#readme > div.ja").isVisible()).toBe(true);
      expect(await reader.locator("#diff-src-todo-ts tbody").isVisible()).toBe(true);
      expect(await reader.locator(".lang-switch").isVisible()).toBe(false);
      expect(await reader.locator("#diff .diff-tools").isVisible()).toBe(false);
    } finally {
      await plain.close();
    }
  });

  it("collapses and expands every diff file", async () => {
    await page.goto(url("s05.html"));
    const open = () => page.locator("#diff details.file[open]").count();
    const all = await page.locator("#diff details.file").count();
    expect(all).toBeGreaterThan(1);
    await page.click('#diff button[data-diff="collapse"]');
    expect(await open()).toBe(0);
    await page.click('#diff button[data-diff="expand"]');
    expect(await open()).toBe(all);
  });

  it("lands on the section a link names, just below the header, however long the page", async () => {
    await page.goto(url("s13.html"));
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
    await page.click('#files a[href="#diff-src-teams-ts"]');
    await landed("diff-src-teams-ts");
  });

  it("follows the timeline to a chapter pair and on to the chapter", async () => {
    await page.goto(url("index.html"));
    await page.click('#t-s05 a[href="s04-s05.html"]');
    expect(page.url()).toBe(url("s04-s05.html"));
    expect(await page.locator("h1").textContent()).toBe("s04 Hooks → s05 TodoWrite");
    await page.click('main a[href="s05.html"]');
    expect(page.url()).toBe(url("s05.html"));
    expect(errors).toEqual([]);
  });

  it("writes screenshots of the index and one chapter page to the test output", async () => {
    mkdirSync(OUTPUT, { recursive: true });
    const shots: Array<[string, string, string | null]> = [
      ["index.html", "site-index.png", null],
      ["s05.html", "site-s05.png", null],
      // The step-through at the request that carries s05's reminder.
      ["s05.html", "site-s05-demo.png", "the todo reminder the harness attached"],
    ];
    for (const [name, shot, mark] of shots) {
      await page.goto(url(name));
      if (mark !== null)
        await page.locator("#demo .mark", { hasText: mark }).scrollIntoViewIfNeeded();
      const file = path.join(OUTPUT, shot);
      await page.screenshot({ path: file });
      expect(readFileSync(file).subarray(1, 4).toString()).toBe("PNG");
    }
  });
});
