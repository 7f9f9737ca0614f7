/**
 * `pnpm course site`, the parts that need no build: the command's checks before it builds
 * anything, the preview server, Markdown and links, highlighting, and pairing a session
 * log's replies with its requests. The site itself is built from every chapter's demo run
 * in demo.test.ts, which checks it there (in headless Chromium too).
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_ROOT, type Io, listChapters, main } from "../scripts/course.ts";
import { highlightLines, markdown, serveSite } from "../scripts/site.ts";
import { pairSteps, sectionHead, systemSections } from "../scripts/site-demo.ts";
import { tempWorkspace } from "./helpers/run.ts";

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

describe("course site: the command and its parts", () => {
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

  it("refuses a folder it did not make, and leaves it as it was", async () => {
    const mine = tempWorkspace("site-mine");
    writeFileSync(path.join(mine, "notes.txt"), "keep me");
    const io = captureIo();
    expect(await main(["site", "--out", mine], io)).toBe(1);
    expect(io.err).toBe(
      `course site: ${mine} is not empty and was not made by \`course site\`; choose another --out\n`,
    );
    expect(readdirSync(mine)).toEqual(["notes.txt"]);
  });

  it("names the chapter whose demo fails, or whose README is missing", async () => {
    const root = tempWorkspace("site-root");
    const chapter = path.join(root, "chapters", "s01-loop");
    mkdirSync(path.join(chapter, "src"), { recursive: true });
    writeFileSync(path.join(chapter, "README.md"), "# s01: Agent Loop\n\n## The idea\n\nA loop.\n");
    writeFileSync(
      path.join(chapter, "src", "main.ts"),
      'export async function main(io) {\n  io.stdout.write("no demo here\\n");\n  return 3;\n}\n',
    );
    const site = (args: string[]) => {
      const io = captureIo();
      return Promise.resolve(main(["site", "--root", root, ...args], io)).then((code) => ({
        code,
        io,
      }));
    };
    const missing = await site(["--out", path.join(root, "site")]);
    expect(missing.code).toBe(1);
    expect(missing.io.err).toBe(
      `course site: cannot read ${path.join(chapter, "README.ja.md")}: every chapter needs README.md, README.ja.md, README.zh.md\n`,
    );
    writeFileSync(
      path.join(chapter, "README.ja.md"),
      "# s01: Agent Loop\n\n## 考え方\n\nループ。\n",
    );
    writeFileSync(path.join(chapter, "README.zh.md"), "# s01: Agent loop\n\n## 思路\n\n循环。\n");
    const failed = await site(["--out", path.join(root, "site")]);
    expect(failed.code).toBe(1);
    expect(failed.io.err).toMatch(
      /^course site: the s01 demo failed, so its page cannot show it: the demo of s01-loop exited with 3:\nno demo here\n/,
    );
  });

  it("checks --port before building anything", async () => {
    const out = tempWorkspace("site-port");
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
    const out = tempWorkspace("site-busy");
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
    const out = tempWorkspace("site-serve");
    writeFileSync(path.join(out, "index.html"), "<!doctype html><title>index</title>\n");
    writeFileSync(path.join(out, "s05.html"), "<!doctype html><title>s05</title>\n");
    const server = await serveSite(out, 0);
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const index = await fetch(server.url);
      expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await index.text()).toBe("<!doctype html><title>index</title>\n");
      expect((await fetch(`${server.url}s05.html`)).status).toBe(200);
      expect((await fetch(`${server.url}..%2F..%2Fpackage.json`)).status).toBe(404);
      expect((await fetch(`${server.url}nothing.html`)).status).toBe(404);
      // A path that does not decode is refused, and the server goes on serving.
      expect((await fetch(`${server.url}%E0%A4%A`)).status).toBe(400);
      expect((await fetch(`${server.url}s05.html`)).status).toBe(200);
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
        "[s06](../s06-subagent/README.md) [en](README.md) [ja](README.ja.md) [zh](README.zh.md)",
        "[s04 思路](../s04-hooks/README.zh.md#思路) [练习](../../exercises/s02.1-grep/README.zh.md)",
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
      "s05.html#zh",
      "s04.html#zh-思路",
      "s02.1.html#zh",
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

  it("splits a system prompt at its labelled paragraphs, keeping a CLAUDE.md's own together", () => {
    const prompt = [
      "You are a coding agent.",
      "Planning: write your steps with todo_write.",
      "Project instructions from CLAUDE.md:\n# Project notes",
      "Run the tests with `npm test` before saying a change is done.",
      "Current local time: 2026-03-02 08:59",
    ].join("\n\n");
    const sections = systemSections([
      { type: "text", text: prompt, cache_control: { type: "ephemeral" } },
    ]);
    expect(sections.map((s) => sectionHead(s.text))).toEqual([
      "You are a coding agent.",
      "Planning:",
      "Project instructions from CLAUDE.md:",
      "Current local time:",
    ]);
    expect(sections[2]!.text).toContain("\n\nRun the tests with `npm test`");
    expect(sections.map((s) => s.cached)).toEqual([false, false, false, true]);
    expect(systemSections(undefined)).toEqual([]);
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
