/**
 * Tests for scripts/course.ts, run in-process against fixture chapter trees
 * built in temporary directories (never the real chapters).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  buildHunks,
  checkCourse,
  colorEnabled,
  computeStats,
  diffLines,
  formatStatsTable,
  listChapters,
  main,
  mechanismList,
  resolveChapter,
  splitLines,
  syncFile,
} from "../scripts/course.ts";
import { formatScores, MODULES, readEquivalents, scoreOf } from "../scripts/mutate-generated.ts";
import { CHAPTERS, type Chapter, CONTRACT, chapterDir, chaptersFrom } from "./chapters.ts";
import { TEST_TEMP } from "./helpers/run.ts";

type Files = Record<string, string>;

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

/** A valid chapter: package.json, its three READMEs, src/main.ts, src/demo.ts, plus `files`. */
function chapterFiles(id: string, files: Files = {}): Files {
  return {
    "package.json": `${JSON.stringify(
      { name: id, type: "module", scripts: { start: "tsx src/main.ts", demo: "tsx src/demo.ts" } },
      null,
      2,
    )}\n`,
    "tsconfig.json": '{ "extends": "../../tsconfig.base.json" }\n',
    "README.md": `# ${id}\n`,
    "README.ja.md": `# ${id} (ja)\n`,
    "README.zh.md": `# ${id} (zh)\n`,
    "src/main.ts": 'console.log("main");\n',
    "src/demo.ts": 'console.log("demo");\n',
    ...files,
  };
}

type Readme = "README.md" | "README.ja.md" | "README.zh.md";
const LANGUAGE_LINKS: Record<Readme, string> = {
  "README.md": "[日本語](README.ja.md) · [中文](README.zh.md)",
  "README.ja.md": "[English](README.md) · [中文](README.zh.md)",
  "README.zh.md": "[English](README.md) · [日本語](README.ja.md)",
};

/** The navigation line of a chapter README: its other languages, previous and next chapter. */
function navLine(readme: Readme, prev?: string, next?: string): string {
  const [back, forward] = {
    "README.md": ["previous:", "next:"],
    "README.ja.md": ["前へ:", "次へ:"],
    "README.zh.md": ["上一章:", "下一章:"],
  }[readme];
  return [
    LANGUAGE_LINKS[readme],
    prev ? `${back} [${prev.slice(0, 3)}](../${prev}/${readme})` : "",
    next ? `${forward} [${next.slice(0, 3)}](../${next}/${readme})` : "",
  ]
    .filter(Boolean)
    .join(" · ");
}

/**
 * A chapter README with every section the README rules ask for, in order (the `course check`
 * fixtures check the other rules on it): `body` replaces the text of a section by heading.
 */
function shapedReadme(
  readme: Readme,
  folder: string,
  prev?: string,
  next?: string,
  body: Record<string, string> = {},
): string {
  const id = folder.slice(0, 3);
  const lang = readme === "README.md" ? "en" : readme === "README.ja.md" ? "ja" : "zh";
  const p = prev?.slice(0, 3);
  const words = (en: string, ja: string, zh: string) => ({ en, ja, zh })[lang];
  const changed = p
    ? words(`What changed from ${p}`, `${p} からの変更点`, `相对 ${p} 的变化`)
    : words("What changed: everything is new", "変更点：すべて新規", "变化：全部是新的");
  const sections: Array<[string, string]> = [
    [words("The problem", "解決したい問題", "要解决的问题"), "P."],
    [words("The idea", "考え方", "思路"), "I."],
    [
      words("Run it", "動かしてみる", "运行一下"),
      `\`\`\`sh\npnpm --silent --filter ${id} demo\n\`\`\`\n\n\`\`\`text\ndemo\n\`\`\``,
    ],
    [words("How it works", "仕組み", "工作原理"), "### 1. One step\n\nS."],
    [changed, "N."],
    [
      words("Claude Code for real", "本物の Claude Code では", "真实的 Claude Code"),
      words(
        "As of December 2026, C.",
        "2026 年 12 月時点のドキュメントでは C。",
        "截至 2026 年 12 月，文档里 C。",
      ),
    ],
    [words("Try it", "試してみる", "动手试试"), "T."],
    [
      words("What the tests pin", "テストで固定している挙動", "测试固定的行为"),
      Array.from({ length: 5 }, (_, i) => `- b${i} → tests/b.test.ts`).join("\n"),
    ],
    [words("Edge cases", "エッジケース", "边界情况"), "E."],
    [words("What's next", "次の章", "下一章"), "W."],
  ];
  return [
    `# ${id}${lang === "en" ? "" : ` (${lang})`}`,
    "",
    navLine(readme, prev, next),
    ...sections.flatMap(([heading, text]) => ["", `## ${heading}`, "", body[heading] ?? text]),
    "",
  ].join("\n");
}

/**
 * Build `<tmp>/chapters/<folder>/<file>` for every folder; returns the root. A README
 * that is still chapterFiles' one-line default becomes a README with every section the
 * README rules ask for and its navigation line (unless `nav` is false: the diff tests count
 * every line, and leave it as it is).
 */
function makeCourse(chapters: Record<string, Files>, nav = true): string {
  const root = fs.mkdtempSync(path.join(TEST_TEMP, "course-test-"));
  roots.push(root);
  const folders = Object.keys(chapters).sort();
  for (const [folder, files] of Object.entries(chapters)) {
    const at = folders.indexOf(folder);
    for (const [rel, text] of Object.entries(files)) {
      const isDefault = nav && /^README(\.ja|\.zh)?\.md$/.test(rel) && /^# [^\n]*\n$/.test(text);
      const body = isDefault
        ? shapedReadme(rel as "README.md", folder, folders[at - 1], folders[at + 1])
        : text;
      write(root, `chapters/${folder}/${rel}`, body);
    }
  }
  return root;
}

function write(root: string, rel: string, text: string): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

function read(root: string, rel: string): string {
  return fs.readFileSync(path.join(root, rel), "utf8");
}

function run(args: string[], color = false): { code: number; out: string; err: string } {
  let out = "";
  let err = "";
  // Every command but `site` answers synchronously; site.test.ts and demo.test.ts run that one.
  const code = main(args, {
    write: (text) => {
      out += text;
    },
    error: (text) => {
      err += text;
    },
    color,
  }) as number;
  return { code, out, err };
}

/** `course check` (it answers with a promise): without the demos unless `demos`. */
async function check(root: string, demos = false): Promise<{ code: number; out: string }> {
  let out = "";
  const args = ["check", "--root", root, ...(demos ? [] : ["--no-demos"])];
  const code = await main(args, { write: (text) => (out += text), error: () => {}, color: false });
  return { code, out };
}

const numbered = (n: number, from = 1) =>
  Array.from({ length: n }, (_, i) => `line ${i + from}`)
    .join("\n")
    .concat("\n");

// ---------------------------------------------------------------------------

describe("diff", () => {
  const twoChapters = () =>
    makeCourse(
      {
        "s01-loop": chapterFiles("s01", {
          "src/loop.ts": numbered(10),
          "src/gone.ts": "export const gone = 1;\nexport const two = 2;\n",
          "src/same.ts": "export const same = true;\n",
        }),
        "s02-tools": chapterFiles("s02", {
          "src/loop.ts": numbered(10).replace("line 5\n", "line five\n"),
          "src/tools.ts": "export const tools = [];\n",
          "src/same.ts": "export const same = true;\n",
          "README.md": "# s02 tools\n",
          "node_modules/x/index.js": "ignored\n",
        }),
      },
      false,
    );

  it("shows added, changed and removed files with correct hunks, in path order", () => {
    const root = twoChapters();
    const { code, out, err } = run(["diff", "s01", "s02", "--root", root]);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toBe(
      [
        "--- s01/src/gone.ts",
        "+++ /dev/null",
        "@@ -1,2 +0,0 @@",
        "-export const gone = 1;",
        "-export const two = 2;",
        "--- s01/src/loop.ts",
        "+++ s02/src/loop.ts",
        "@@ -2,7 +2,7 @@",
        " line 2",
        " line 3",
        " line 4",
        "-line 5",
        "+line five",
        " line 6",
        " line 7",
        " line 8",
        "--- /dev/null",
        "+++ s02/src/tools.ts",
        "@@ -0,0 +1,1 @@",
        "+export const tools = [];",
        "3 files changed, +2 -3",
        "",
      ].join("\n"),
    );
  });

  it("leaves out READMEs and package metadata unless --all, and never node_modules", () => {
    const root = twoChapters();
    const plain = run(["diff", "1", "s02-tools", "--root", root]).out;
    expect(plain).not.toContain("README");
    expect(plain).not.toContain("package.json");

    const all = run(["diff", "s01", "s02", "--all", "--root", root]);
    expect(all.code).toBe(0);
    expect(all.out).toContain(
      "--- s01/README.md\n+++ s02/README.md\n@@ -1,1 +1,1 @@\n-# s01\n+# s02 tools\n",
    );
    expect(all.out).toContain("--- s01/package.json\n+++ s02/package.json\n");
    expect(all.out).toContain("--- s01/README.ja.md\n+++ s02/README.ja.md\n");
    expect(all.out).not.toContain("tsconfig.json"); // identical in both
    expect(all.out).not.toContain("node_modules");
    expect(all.out).toMatch(/\n7 files changed, \+6 -7\n$/);
  });

  it("is plain text when colour is off and coloured when on", () => {
    const root = twoChapters();
    expect(run(["diff", "s01", "s02", "--root", root]).out).not.toContain("\x1b[");
    const coloured = run(["diff", "s01", "s02", "--root", root], true).out;
    expect(coloured).toContain("\x1b[32m+line five\x1b[39m");
    expect(coloured).toContain("\x1b[31m-line 5\x1b[39m");
    expect(coloured).toContain("\x1b[36m@@ -2,7 +2,7 @@\x1b[39m");
    expect(coloured).toContain("\x1b[1m--- s01/src/loop.ts\x1b[22m");
  });

  it("splits distant changes into separate hunks and merges close ones", () => {
    const a = splitLines(numbered(30));
    const far = splitLines(
      numbered(30).replace("line 3\n", "three\n").replace("line 25\n", "twenty-five\n"),
    );
    const hunks = buildHunks(diffLines(a, far));
    expect(hunks.map((h) => [h.oldStart, h.oldCount, h.newStart, h.newCount])).toEqual([
      [1, 6, 1, 6],
      [22, 7, 22, 7],
    ]);
    // Six equal lines between two changes still make one hunk; seven make two.
    const close = splitLines(
      numbered(30).replace("line 10\n", "ten\n").replace("line 17\n", "x\n"),
    );
    expect(buildHunks(diffLines(a, close))).toHaveLength(1);
    const apart = splitLines(
      numbered(30).replace("line 10\n", "ten\n").replace("line 18\n", "x\n"),
    );
    expect(buildHunks(diffLines(a, apart))).toHaveLength(2);
  });

  it("puts a replaced block's deletions before its insertions", () => {
    const edits = diffLines(["a\n", "b\n", "c\n"], ["x\n", "y\n", "c\n"]);
    expect(edits.map((e) => `${e.kind[0]}${e.text.trim()}`)).toEqual([
      "da",
      "db",
      "ix",
      "iy",
      "ec",
    ]);
  });

  it("finds a minimal diff for insertions and deletions", () => {
    const edits = diffLines(["a\n", "b\n", "c\n", "d\n"], ["a\n", "c\n", "x\n", "d\n", "e\n"]);
    expect(edits.map((e) => `${e.kind[0]}${e.text.trim()}`)).toEqual([
      "ea",
      "db",
      "ec",
      "ix",
      "ed",
      "ie",
    ]);
  });

  it("marks a missing newline at the end of a file", () => {
    const root = makeCourse({
      "s01-a": chapterFiles("s01", { "src/x.ts": "one\ntwo\n" }),
      "s02-b": chapterFiles("s02", { "src/x.ts": "one\ntwo" }),
    });
    expect(run(["diff", "s01", "s02", "--root", root]).out).toBe(
      "--- s01/src/x.ts\n+++ s02/src/x.ts\n@@ -1,2 +1,2 @@\n one\n-two\n+two\n\\ No newline at end of file\n1 file changed, +1 -1\n",
    );
  });
});

describe("chapter references", () => {
  it("accepts id, folder name and number", () => {
    const root = makeCourse({ "s01-loop": chapterFiles("s01"), "s07-bash": chapterFiles("s07") });
    const chapters = listChapters(root);
    expect(resolveChapter(chapters, "s07").folder).toBe("s07-bash");
    expect(resolveChapter(chapters, "s07-bash").folder).toBe("s07-bash");
    expect(resolveChapter(chapters, "7").folder).toBe("s07-bash");
    expect(resolveChapter(chapters, "01").folder).toBe("s01-loop");
  });

  it("rejects an unknown chapter with one line listing the valid ids, exit 2", () => {
    const root = makeCourse({ "s01-loop": chapterFiles("s01"), "s02-tools": chapterFiles("s02") });
    const { code, out, err } = run(["diff", "s01", "s09", "--root", root]);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err).toBe('course diff: unknown chapter "s09": valid ids are s01, s02\n');
    expect(run(["sync", "src/main.ts", "--from", "loop", "--root", root]).err).toContain(
      'unknown chapter "loop": valid ids are s01, s02',
    );
  });
});

describe("stats", () => {
  it("counts files and lines against the previous chapter, code only", () => {
    const root = makeCourse({
      "s01-loop": chapterFiles("s01", { "src/loop.ts": numbered(10) }),
      "s02-tools": chapterFiles("s02", {
        "src/loop.ts": numbered(10).replace("line 2\n", "line two\n"),
        "src/tools.ts": numbered(4),
        "README.md": "# a much longer readme\n\nthat stats ignores\n",
      }),
      "s03-bash": chapterFiles("s03", {
        "src/loop.ts": numbered(10).replace("line 2\n", "line two\n").replace("line 9\n", ""),
        "src/bash.ts": numbered(3),
      }),
    });
    // s01: main 1 + demo 1 + loop 10 = 12 lines, all added.
    // s02: loop.ts changed (+1 -1), tools.ts added (+4) → 16 lines.
    // s03: loop.ts changed (-1), tools.ts removed (-4), bash.ts added (+3) → 14 lines.
    expect(computeStats(root)).toEqual([
      {
        id: "s01",
        folder: "s01-loop",
        filesAdded: 3,
        filesChanged: 0,
        filesRemoved: 0,
        linesAdded: 12,
        linesRemoved: 0,
        codeLines: 12,
      },
      {
        id: "s02",
        folder: "s02-tools",
        filesAdded: 1,
        filesChanged: 1,
        filesRemoved: 0,
        linesAdded: 5,
        linesRemoved: 1,
        codeLines: 16,
      },
      {
        id: "s03",
        folder: "s03-bash",
        filesAdded: 1,
        filesChanged: 1,
        filesRemoved: 1,
        linesAdded: 3,
        linesRemoved: 5,
        codeLines: 14,
      },
    ]);
    const { code, out } = run(["stats", "--root", root]);
    expect(code).toBe(0);
    expect(out).toBe(formatStatsTable(computeStats(root)));
    const lines = out.trimEnd().split("\n");
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(
      /^\| Chapter \| Folder +\| Files added \| Files changed \| Files removed \|/,
    );
    expect(lines[1]).toMatch(/^\| :-+ \| :-+ \| -+: \|/);
    expect(lines[3]?.split("|").map((c) => c.trim())).toEqual([
      "",
      "s02",
      "`s02-tools`",
      "1",
      "1",
      "0",
      "5",
      "1",
      "16",
      "",
    ]);
    for (const line of lines) expect(line.length).toBe(lines[0]?.length);
  });
});

describe("sync", () => {
  const OLD = "export function bash() {\n  return 1;\n}\n";
  const NEW = "export function bash() {\n  return 2;\n}\n";
  const OTHER = "export function bash() {\n  return 1; // changed in s04\n}\n";

  /** s02 holds the edit; s03 old, s04 different, s05 absent, s06 already new, s07 old. */
  function gitCourse(): string {
    const root = makeCourse({
      "s01-loop": chapterFiles("s01"),
      "s02-tools": chapterFiles("s02", { "src/bash.ts": OLD }),
      "s03-bash": chapterFiles("s03", { "src/bash.ts": OLD }),
      "s04-todo": chapterFiles("s04", { "src/bash.ts": OTHER }),
      "s05-sub": chapterFiles("s05"),
      "s06-skills": chapterFiles("s06", { "src/bash.ts": NEW }),
      "s07-compact": chapterFiles("s07", { "src/bash.ts": OLD }),
    });
    const git = (...args: string[]) => execFileSync("git", args, { cwd: root, stdio: "ignore" });
    git("init", "-q");
    git("add", "-A");
    git(
      "-c",
      "user.name=Course Test",
      "-c",
      "user.email=test@example.com",
      "-c",
      "commit.gpgsign=false",
      "commit",
      "-q",
      "-m",
      "fixture",
    );
    write(root, "chapters/s02-tools/src/bash.ts", NEW);
    return root;
  }

  it("updates identical later copies, reports the rest, and exits 1 on a manual merge", () => {
    const root = gitCourse();
    const { code, out } = run(["sync", "src/bash.ts", "--from", "s02", "--root", root]);
    expect(code).toBe(1);
    expect(out.split("\n").slice(0, 5)).toEqual([
      "updated s03: chapters/s03-bash/src/bash.ts",
      "s04: merge by hand: chapters/s04-todo/src/bash.ts",
      "s05: absent",
      "s06: already up to date",
      "updated s07: chapters/s07-compact/src/bash.ts",
    ]);
    expect(out).toContain("2 updated, 1 already up to date, 1 absent, 1 to merge by hand");
    expect(read(root, "chapters/s03-bash/src/bash.ts")).toBe(NEW);
    expect(read(root, "chapters/s04-todo/src/bash.ts")).toBe(OTHER);
    expect(fs.existsSync(path.join(root, "chapters/s05-sub/src/bash.ts"))).toBe(false);
    expect(read(root, "chapters/s07-compact/src/bash.ts")).toBe(NEW);
    expect(read(root, "chapters/s01-loop/src/main.ts")).toBe('console.log("main");\n');
  });

  it("writes nothing with --dry-run", () => {
    const root = gitCourse();
    const { code, out } = run(["sync", "src/bash.ts", "--from", "2", "--dry-run", "--root", root]);
    expect(code).toBe(1);
    expect(out).toContain("would update s03: chapters/s03-bash/src/bash.ts");
    expect(out).toContain("dry run, nothing written");
    expect(read(root, "chapters/s03-bash/src/bash.ts")).toBe(OLD);
    expect(read(root, "chapters/s07-compact/src/bash.ts")).toBe(OLD);
  });

  it("exits 0 once every later copy is up to date", () => {
    const root = gitCourse();
    write(root, "chapters/s04-todo/src/bash.ts", NEW); // merged by hand
    expect(run(["sync", "src/bash.ts", "--from", "s02", "--root", root]).code).toBe(0);
    const again = run(["sync", "src/bash.ts", "--from", "s02", "--root", root]);
    expect(again.code).toBe(0);
    expect(again.out).toContain("s03: already up to date\ns04: already up to date\n");
    expect(again.out).toContain("0 updated, 4 already up to date, 1 absent, 0 to merge by hand");
  });

  it("takes the old version from --old when git has none, and fails clearly without either", () => {
    const root = makeCourse({
      "s01-loop": chapterFiles("s01", { "src/bash.ts": NEW }),
      "s02-tools": chapterFiles("s02", { "src/bash.ts": OLD }),
    });
    const noOld = run(["sync", "src/bash.ts", "--from", "s01", "--root", root]);
    expect(noOld.code).toBe(2);
    expect(noOld.err).toContain("git has no committed version of chapters/s01-loop/src/bash.ts");
    expect(noOld.err).toContain("--old");
    expect(read(root, "chapters/s02-tools/src/bash.ts")).toBe(OLD);

    write(root, "old-bash.ts", OLD);
    const result = syncFile(root, "src/bash.ts", "s01", {
      oldPath: path.join(root, "old-bash.ts"),
    });
    expect(result.entries).toEqual([
      { id: "s02", file: "chapters/s02-tools/src/bash.ts", status: "updated" },
    ]);
    expect(read(root, "chapters/s02-tools/src/bash.ts")).toBe(NEW);
  });
});

describe("check", () => {
  const clean = (): Record<string, Files> => ({
    "s01-loop": chapterFiles("s01", { "src/loop.ts": "loop v1\n" }),
    "s02-tools": chapterFiles("s02", { "src/loop.ts": "loop v1\n", "src/tools.ts": "tools\n" }),
    "s03-bash": chapterFiles("s03", { "src/loop.ts": "loop v1\n", "src/tools.ts": "tools\n" }),
  });

  it("passes on a clean course", async () => {
    const root = makeCourse(clean());
    expect(checkCourse(root)).toEqual([]);
    expect(await check(root)).toEqual({ code: 0, out: "course check: 3 chapters OK\n" });
  });

  it("flags drift: identical in N-1 and N+1 but different in N", async () => {
    const chapters = clean();
    chapters["s02-tools"] = { ...chapters["s02-tools"], "src/loop.ts": "loop v1 with a fix\n" };
    const root = makeCourse(chapters);
    const { code, out } = await check(root);
    expect(code).toBe(1);
    expect(out).toBe(
      "drift: chapters/s02-tools/src/loop.ts differs from both s01 and s03, which are identical — carry the fix forward with course sync\n" +
        "course check: 1 problem in 3 chapters\n",
    );
  });

  it("does not flag a file that changes and stays changed (A, B, B)", () => {
    const chapters = clean();
    chapters["s02-tools"] = { ...chapters["s02-tools"], "src/loop.ts": "loop v2\n" };
    chapters["s03-bash"] = { ...chapters["s03-bash"], "src/loop.ts": "loop v2\n" };
    expect(checkCourse(makeCourse(chapters))).toEqual([]);
  });

  it("flags a missing README.ja.md", async () => {
    const chapters = clean();
    const { "README.ja.md": _dropped, ...rest } = chapters["s02-tools"] ?? {};
    chapters["s02-tools"] = rest;
    const { code, out } = await check(makeCourse(chapters));
    expect(code).toBe(1);
    expect(out).toContain("chapters/s02-tools/README.ja.md: missing\n");
  });

  it("flags a wrong package name", async () => {
    const chapters = clean();
    chapters["s03-bash"] = chapterFiles("s02", {
      "src/loop.ts": "loop v1\n",
      "src/tools.ts": "tools\n",
    });
    const { code, out } = await check(makeCourse(chapters));
    expect(code).toBe(1);
    expect(out).toContain('chapters/s03-bash/package.json: name is "s02", expected "s03"\n');
  });

  it("flags a missing demo script", async () => {
    const chapters = clean();
    chapters["s01-loop"] = {
      ...chapters["s01-loop"],
      "package.json": JSON.stringify({ name: "s01", scripts: { start: "tsx src/main.ts" } }),
    };
    const { code, out } = await check(makeCourse(chapters));
    expect(code).toBe(1);
    expect(out).toContain('chapters/s01-loop/package.json: missing script "demo"\n');
    expect(out).not.toContain('"start"');
  });

  it("flags non-contiguous numbering", async () => {
    const { "s03-bash": _renamed, ...chapters } = clean();
    chapters["s04-bash"] = chapterFiles("s04", {
      "src/loop.ts": "loop v1\n",
      "src/tools.ts": "tools\n",
    });
    const { code, out } = await check(makeCourse(chapters));
    expect(code).toBe(1);
    expect(out).toContain(
      "chapters/s04-bash: numbering must run from s01 without gaps — expected s03 after s02-tools\n",
    );
    expect(out).toContain("course check: 1 problem in 3 chapters\n");
  });
});

// The README rules (scripts/readme-check.ts), each on a fixture course that breaks it once.
describe("check: the README rules", () => {
  const folders = ["s01-loop", "s02-tools", "s03-bash"];
  const clean = (): Record<string, Files> => ({
    "s01-loop": chapterFiles("s01", { "src/loop.ts": "loop v1\n" }),
    "s02-tools": chapterFiles("s02", { "src/loop.ts": "loop v1\n", "src/tools.ts": "tools\n" }),
    "s03-bash": chapterFiles("s03", { "src/loop.ts": "loop v1\n", "src/tools.ts": "tools\n" }),
  });
  /** s02's README in `readme`, its sections' text replaced by `body`. */
  const withS02 = (body: Record<string, string>, readme: Readme = "README.md") => {
    const chapters = clean();
    chapters["s02-tools"] = {
      ...chapters["s02-tools"],
      [readme]: shapedReadme(readme, folders[1]!, folders[0], folders[2], body),
    };
    return chapters;
  };
  /** What check says, but the page lengths (one language edited alone may change them). */
  const problems = async (chapters: Record<string, Files>, demos = false) =>
    (await check(makeCourse(chapters), demos)).out
      .split("\n")
      .filter((l) => l && !l.startsWith("course check:") && !l.startsWith("length:"));

  it("fails on a missing section, one out of order, and one it does not know", async () => {
    const chapters = clean();
    const en = shapedReadme("README.md", folders[1]!, folders[0], folders[2]);
    chapters["s02-tools"] = {
      ...chapters["s02-tools"],
      "README.md": en.replace("## Edge cases", "## Prompts to try"),
      "README.ja.md": shapedReadme("README.ja.md", folders[1]!, folders[0], folders[2])
        .replace("## 考え方", "## (idea)")
        .replace("## 動かしてみる", "## 考え方")
        .replace("## (idea)", "## 動かしてみる"),
    };
    const found = await problems(chapters);
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(
      /^shape: chapters\/s02-tools\/README\.md: sections must be "## The problem", .* \(missing "Edge cases"; not expected "Prompts to try"\)$/,
    );
    expect(found[1]).toMatch(/^shape: chapters\/s02-tools\/README\.ja\.md: .* \(out of order\)$/);
    // The first chapter's "What changed" says everything is new; a later one names its predecessor.
    expect(found[0]).toContain('"## What changed from s01"');
  });

  it("counts the steps of How it works and the bullets of What the tests pin", async () => {
    const steps = Array.from({ length: 9 }, (_, i) => `### ${i + 1}. Step\n\nS.`).join("\n\n");
    const bullets = (n: number) =>
      Array.from({ length: n }, (_, i) => `- b${i} → t.test.ts`).join("\n");
    expect(await problems(withS02({ "How it works": steps }))).toEqual([
      'shape: chapters/s02-tools/README.md:23 "How it works" has 9 steps; at most 8',
    ]);
    const bold = Array.from({ length: 8 }, (_, i) => `**${i + 1}. Step.** S.`).join("\n\n");
    expect(await problems(withS02({ "How it works": bold }))).toEqual([]);
    for (const n of [4, 9]) {
      expect(await problems(withS02({ "What the tests pin": bullets(n) }))).toEqual([
        expect.stringMatching(new RegExp(`"What the tests pin" has ${n} bullets; 5 to 8`)),
      ]);
    }
  });

  it("asks Claude Code for real to say when the docs were read, in each language", async () => {
    expect(await problems(withS02({ "Claude Code for real": "Claude Code does C." }))).toEqual([
      expect.stringMatching(/README\.md:\d+ "Claude Code for real" says when the docs were read/),
    ]);
    expect(await problems(withS02({ "Claude Code for real": "As of 2026-12, C." }))).toEqual([]);
    expect(
      await problems(
        withS02({ "本物の Claude Code では": "ドキュメントでは C。" }, "README.ja.md"),
      ),
    ).toEqual([expect.stringMatching(/README\.ja\.md:\d+ "本物の Claude Code では" says when/)]);
  });

  it("fails on a TypeScript block that names no file, not on other blocks", async () => {
    const body = "```ts\nconst a = 1;\n```\n\n```json\n{}\n```\n\n```ts src/loop.ts\nloop v1\n```";
    expect(await problems(withS02({ "How it works": `### 1. Step\n\n${body}` }))).toEqual([
      "label: chapters/s02-tools/README.md:27 a TypeScript block names no file (```ts src/<file>.ts, quoted verbatim)",
    ]);
  });

  it("fails when What changed names a file the diff does not show changed", async () => {
    const changed = "- `src/tools.ts` is new.\n- `loop.ts` is the same.\n- `tools.ts` again.";
    expect(await problems(withS02({ "What changed from s01": changed }))).toEqual([
      "changed: chapters/s02-tools/README.md:32 names loop.ts, which `course diff s01 s02` does not show changed",
    ]);
  });

  it("fails on a citation the repository does not hold: a spec section, spec test IDs, a commit", async () => {
    const text = [
      "As §0.4 says.",
      "Tests R1–R17 pin it.",
      "See `git diff 49df465 -- src`.",
      "A task `task_0000beef` and a hex run inside a word are fine: x49df465y.",
    ].join("\n");
    const found = await problems(withS02({ "The problem": text }));
    expect(found).toEqual([
      expect.stringMatching(
        /^citation: chapters\/s02-tools\/README\.md:7 cites a spec section \("§0"\)/,
      ),
      expect.stringMatching(/README\.md:8 cites spec test IDs \("R1–R17"\)/),
      expect.stringMatching(/README\.md:9 cites a commit hash \("49df465"\)/),
    ]);
  });

  it("flags a variant the Japanese glossary rules out, outside code only, with the word to use", async () => {
    const chapters = withS02(
      { 考え方: "仕組みの約束事です。`約束事` はコードの中なので数えません。" },
      "README.ja.md",
    );
    const root = makeCourse(chapters);
    write(
      root,
      "docs/glossary.ja.md",
      "| 英語 | 使う言葉 | 使わない言い方 | 補足 |\n|---|---|---|---|\n| contract | 契約 | 約束事、決まりごと | |\n",
    );
    write(root, "docs/notes.ja.md", "# メモ\n\n決まりごとの話。\n");
    expect((await check(root)).out.split("\n").slice(0, -2)).toEqual([
      "glossary: chapters/s02-tools/README.ja.md:11 says 「約束事」; docs/glossary.ja.md says 「契約」",
      "glossary: docs/notes.ja.md:3 says 「決まりごと」; docs/glossary.ja.md says 「契約」",
    ]);
  });

  it("holds a Chinese README to the same rules: sections, the date, excerpts, glossary, length", async () => {
    const root = makeCourse(
      withS02(
        {
          思路: "机制之间的合约。`合约` 在代码里，不算。",
          "真实的 Claude Code": "文档里 C。",
          工作原理: "### 1. 一步\n\n```ts src/tools.ts\ntools, drifted\n```",
        },
        "README.zh.md",
      ),
    );
    write(
      root,
      "docs/glossary.zh.md",
      "| 英文 | 使用的词 | 不用的说法 | 说明 |\n|---|---|---|---|\n| contract | 契约 | 合约、约定 | |\n",
    );
    const zh = path.join(root, "chapters/s02-tools/README.zh.md");
    fs.writeFileSync(zh, fs.readFileSync(zh, "utf8").replace("## 边界情况", "## 边缘情况"));
    fs.appendFileSync(zh, "\n".repeat(40));
    expect((await check(root)).out.split("\n").slice(0, -2)).toEqual([
      'excerpt: chapters/s02-tools/README.zh.md:27 is not verbatim src/tools.ts (from "tools, drifted") — copy it again from the code',
      expect.stringMatching(
        /^shape: chapters\/s02-tools\/README\.zh\.md: sections must be "## 要解决的问题", "## 思路", .*"## 相对 s01 的变化".* \(missing "边界情况"; not expected "边缘情况"\)$/,
      ),
      expect.stringMatching(
        /^shape: chapters\/s02-tools\/README\.zh\.md:\d+ "真实的 Claude Code" says when the docs were read \(“截至 2026 年 12 月，…”\)$/,
      ),
      "glossary: chapters/s02-tools/README.zh.md:11 says “合约”; docs/glossary.zh.md says “契约”",
      "length: chapters/s02-tools/README.zh.md has 97 lines, more than README.md's 55; no longer than the English page",
    ]);
  });

  it("fails on a stats table that is not what course stats prints, and on pages too long", async () => {
    const root = makeCourse(clean());
    const table = formatStatsTable(computeStats(root));
    write(root, "README.md", `# Course\n\n[日本語](README.ja.md)\n\n${table}`);
    write(root, "README.ja.md", "# コース\n\n[English](README.md)\n");
    expect((await check(root)).code).toBe(0);
    write(
      root,
      "README.md",
      `# Course\n\n[日本語](README.ja.md)\n\n${table.replace(/\|\s+1 \|/, "| 9 |")}`,
    );
    write(root, "README.ja.md", `# コース\n\n[English](README.md)\n${"\n".repeat(20)}`);
    expect((await check(root)).out.split("\n").slice(0, -2)).toEqual([
      "stats: README.md:5 the table is not what `pnpm course stats` prints now — paste it again",
      "length: README.ja.md has 23 lines, more than README.md's 9; no longer than the English page",
    ]);
    write(root, "README.md", `# Course\n\n[日本語](README.ja.md)\n${"line\n".repeat(148)}`);
    write(
      root,
      "chapters/s02-tools/README.md",
      shapedReadme("README.md", folders[1]!, folders[0], folders[2], {
        "Edge cases": "- e\n".repeat(380),
      }),
    );
    expect((await check(root)).out.split("\n").slice(0, -2)).toEqual([
      "length: chapters/s02-tools/README.md has 435 lines; at most 400",
      "length: README.md has 151 lines; at most 150",
    ]);
  });

  it("runs each demo: Run it must show its command and what it prints (elisions allowed)", async () => {
    // One chapter: each check runs every chapter's demo as a process.
    const chapters: Record<string, Files> = { "s01-loop": clean()["s01-loop"] ?? {} };
    chapters["s01-loop"] = {
      ...chapters["s01-loop"],
      "src/demo.ts":
        'console.log("demo on http://127.0.0.1:" + (40000 + Math.floor(Math.random() * 999)));\n' +
        'console.log("workspace /tmp/harness-demo-s01-" + Math.random().toString(36).slice(2, 8));\n' +
        'console.log("took " + (Math.random() * 3).toFixed(1) + " s");\n' +
        'console.log("[usage] in " + (1000 + Math.floor(Math.random() * 9)) + " / out 7 tokens");\n' +
        'console.log("done");\n',
    };
    const run = (transcript: string, command = "pnpm --silent --filter s01 demo") => {
      const copy = { ...chapters };
      copy["s01-loop"] = {
        ...copy["s01-loop"],
        "README.md": shapedReadme("README.md", folders[0]!, undefined, undefined, {
          "Run it": `\`\`\`sh\n${command}\n\`\`\`\n\n\`\`\`text\n${transcript}\n\`\`\``,
        }),
      };
      return problems(copy, true);
    };
    const printed =
      "demo on http://127.0.0.1:41234\nworkspace /tmp/harness-demo-s01-…\ntook 0.5 s\n[usage] in 1234 / out 7 tokens";
    expect(await run(printed)).toEqual([
      // The Japanese and Chinese pages still show s01's default transcript, "demo", which is
      // not printed.
      expect.stringMatching(
        /^transcript: chapters\/s01-loop\/README\.ja\.md:\d+ is not what the demo prints \(from "demo"\)/,
      ),
      expect.stringMatching(/^transcript: chapters\/s01-loop\/README\.zh\.md:\d+ is not what/),
    ]);
    expect(await run("demo on http://127.0.0.1:1\n…\ndone")).toHaveLength(2);
    expect(await run("done\n…\ndemo on http://127.0.0.1:1")).toEqual([
      expect.stringMatching(/README\.md:\d+ is not what the demo prints \(from "demo on http:/),
      expect.anything(),
      expect.anything(),
    ]);
    expect(await run("done", "pnpm --silent --filter s01 start")).toEqual([
      expect.stringMatching(/README\.md:\d+ "Run it" shows no `pnpm --silent --filter s01 demo`/),
      expect.anything(),
      expect.anything(),
    ]);
  }, 20000);
});

// The list rule on the course itself: what lets a suite skip the chapters in between
// (`carried` in chapters.ts). A chapter that reorders or drops a mechanism fails here.
describe("the course's own lists of mechanisms", () => {
  const listOf = (chapter: Chapter) =>
    mechanismList(fs.readFileSync(path.join(chapterDir(chapter), "src", "main.ts"), "utf8"));
  it.each(
    chaptersFrom("s05").map(
      (chapter, i) => [chapter.id, chapter, chaptersFrom("s04")[i]!] as const,
    ),
  )(
    "%s lists the previous chapter's mechanisms in order, then its own",
    (_id, chapter, previous) => {
      const before = listOf(previous);
      const after = listOf(chapter);
      expect(after.slice(0, before.length)).toEqual(before);
      expect(after.length).toBeGreaterThan(before.length);
    },
  );
});

describe("check: a chapter knows only its past", () => {
  const course = (): Record<string, Files> => ({
    "s01-a": chapterFiles("s01", { "src/loop.ts": "// the loop; s01 comes first\n" }),
    "s02-b": chapterFiles("s02", { "src/loop.ts": "// the loop; s01 comes first\n" }),
    "s03-c": chapterFiles("s03", { "src/loop.ts": "// the loop; s01 comes first\n" }),
  });

  it("passes when a chapter's code names itself and earlier chapters only", () => {
    const chapters = course();
    chapters["s02-b"] = { ...chapters["s02-b"], "src/tools.ts": "// s02's tools, after s01\n" };
    // Prose may point ahead: what's next is part of a README.
    chapters["s01-a"] = { ...chapters["s01-a"], "README.md": "# s01\n\nNext: s02 and s03.\n" };
    expect(checkCourse(makeCourse(chapters, false)).filter((p) => p.startsWith("past:"))).toEqual(
      [],
    );
  });

  it("fails on a planted reference to a later chapter, in code or a comment, with where it is", () => {
    const chapters = course();
    chapters["s01-a"] = {
      ...chapters["s01-a"],
      "src/loop.ts": "// the loop\nexport const seam = 1; // s03 uses this\n",
    };
    chapters["s02-b"] = { ...chapters["s02-b"], "src/demo.ts": 'const later = "s03-c";\n' };
    expect(checkCourse(makeCourse(chapters)).filter((p) => p.startsWith("past:"))).toEqual([
      "past: chapters/s01-a/src/loop.ts:2 names s03, a later chapter — a chapter's code knows only its past; what s03 needs, s03 adds itself",
      "past: chapters/s02-b/src/demo.ts:1 names s03, a later chapter — a chapter's code knows only its past; what s03 needs, s03 adds itself",
    ]);
  });
});

describe("check: the shape of a chapter (from s05 on)", () => {
  /** s04 … s06: s05 adds todo.ts, s06 adds task.ts; hooks.ts is s04's mechanism file. */
  const course = (): Record<string, Files> => {
    const base = { "src/loop.ts": "loop\n", "src/hooks.ts": "hooks v1\n" };
    return {
      "s01-a": chapterFiles("s01", { "src/loop.ts": "loop\n" }),
      "s02-b": chapterFiles("s02", { "src/loop.ts": "loop\n" }),
      "s03-c": chapterFiles("s03", { "src/loop.ts": "loop\n" }),
      "s04-hooks": chapterFiles("s04", base),
      "s05-todo": chapterFiles("s05", { ...base, "src/todo.ts": "todo\n" }),
      "s06-task": chapterFiles("s06", { ...base, "src/todo.ts": "todo\n", "src/task.ts": "t\n" }),
    };
  };
  const edit = (chapters: Record<string, Files>, folder: string, rel: string, text: string) => {
    chapters[folder] = { ...chapters[folder], [rel]: text };
  };

  it("passes when each chapter only adds files and rewrites main.ts, prompt.ts and demo.ts", () => {
    const chapters = course();
    edit(chapters, "s05-todo", "src/main.ts", "main with todo\n");
    edit(chapters, "s06-task", "src/main.ts", "main with todo and task\n");
    edit(chapters, "s05-todo", "src/prompt.ts", "prompt with todo\n");
    edit(chapters, "s06-task", "src/prompt.ts", "prompt with todo\n");
    edit(chapters, "s06-task", "src/demo.ts", "demo of task\n");
    expect(checkCourse(makeCourse(chapters))).toEqual([]);
  });

  it("fails when a chapter's list of mechanisms drops or reorders the previous chapter's", () => {
    const list = (...names: string[]) =>
      `runHarness(io, CHAPTER, main, (harness) => [\n${names.map((n) => `    ${n}(harness),`).join("\n")}\n]);\n`;
    const chapters = course();
    edit(
      chapters,
      "s05-todo",
      "src/main.ts",
      list("bashMechanism", "hooksMechanism", "todoMechanism"),
    );
    edit(
      chapters,
      "s06-task",
      "src/main.ts",
      list("bashMechanism", "todoMechanism", "taskMechanism"),
    );
    expect(checkCourse(makeCourse(chapters))).toEqual([
      "list: chapters/s06-task/src/main.ts lists bashMechanism, todoMechanism, taskMechanism; it must list s05's bashMechanism, hooksMechanism, todoMechanism in that order, then its own",
    ]);
    edit(
      chapters,
      "s06-task",
      "src/main.ts",
      list("bashMechanism", "hooksMechanism", "todoMechanism", "taskMechanism"),
    );
    expect(checkCourse(makeCourse(chapters))).toEqual([]);
  });

  it("fails when a later chapter edits an earlier mechanism's file", async () => {
    const chapters = course();
    edit(chapters, "s06-task", "src/hooks.ts", "hooks v1, patched for tasks\n");
    const { code, out } = await check(makeCourse(chapters));
    expect(code).toBe(1);
    expect(out).toContain(
      "shape: chapters/s06-task/src/hooks.ts edits s05's copy of an earlier mechanism's file",
    );
    expect(out).toContain("course check: 1 problem in 6 chapters\n");
  });

  it("fails when a chapter drops an earlier file, but not before s05", () => {
    const chapters = course();
    const { "src/todo.ts": _gone, ...rest } = chapters["s06-task"] ?? {};
    chapters["s06-task"] = rest;
    // s02 → s03 may still replace files (s03 replaces guard.ts): not checked.
    edit(chapters, "s03-c", "src/loop.ts", "loop, changed in s03\n");
    edit(chapters, "s04-hooks", "src/loop.ts", "loop, changed in s03\n");
    edit(chapters, "s05-todo", "src/loop.ts", "loop, changed in s03\n");
    edit(chapters, "s06-task", "src/loop.ts", "loop, changed in s03\n");
    expect(checkCourse(makeCourse(chapters))).toEqual([
      "shape: chapters/s06-task/src/todo.ts is missing, but s05 has it — a chapter keeps every earlier file (or list it in chapters/edits.json with a reason)",
    ]);
  });

  it("accepts an edit the table lists with a reason, and flags entries that are stale or bad", () => {
    const chapters = course();
    edit(chapters, "s06-task", "src/hooks.ts", "hooks v1 + a task event\n");
    const root = makeCourse(chapters);
    write(
      root,
      "chapters/edits.json",
      JSON.stringify({ s06: { "src/hooks.ts": "s06 adds the TaskCreated event to the bus" } }),
    );
    expect(checkCourse(root)).toEqual([]);
    write(
      root,
      "chapters/edits.json",
      JSON.stringify({
        s05: { "src/hooks.ts": "no longer true" },
        s06: { "src/hooks.ts": "" },
        s04: { "src/loop.ts": "too early" },
      }),
    );
    expect(checkCourse(root)).toEqual([
      'chapters/edits.json: "s06" → "src/hooks.ts" needs a reason (a non-empty string)',
      'chapters/edits.json: "s04" is not a chapter from s05 on',
      "shape: chapters/edits.json lists s05 src/hooks.ts, but it is identical to s04's copy — remove the entry",
      "shape: chapters/s06-task/src/hooks.ts edits s05's copy of an earlier mechanism's file — a chapter adds its own files and changes only main.ts, prompt.ts and demo.ts; carry a fix with course sync, or list the file in chapters/edits.json with a reason",
    ]);
    write(root, "chapters/edits.json", "{ not json");
    expect(checkCourse(root)[0]).toMatch(/^chapters\/edits\.json: invalid JSON/);
  });
});

describe("check: README excerpts", () => {
  const source = ["export function add(a, b) {", "  // why: one line", "  return a + b;", "}", ""];
  const withReadme = (readme: string) =>
    makeCourse({
      "s01-a": chapterFiles("s01", { "src/add.ts": source.join("\n"), "README.md": readme }),
    });
  /** The excerpt rule's lines (these READMEs are bare: no language line). */
  const excerpts = (root: string) => checkCourse(root).filter((l) => l.startsWith("excerpt:"));

  it("accepts an excerpt that is the file's text, with // … for lines left out", () => {
    const readme = [
      "# s01",
      "```ts src/add.ts",
      "export function add(a, b) {",
      "  // why: one line",
      "```",
      "",
      "```ts src/add.ts",
      "export function add(a, b) {",
      "// …",
      "  return a + b;",
      "```",
      "```sh",
      "not checked",
      "```",
    ].join("\n");
    expect(excerpts(withReadme(readme))).toEqual([]);
  });

  it("flags an excerpt that no longer matches the code, with the README line", () => {
    const readme = ["# s01", "", "```ts src/add.ts", "  return a - b;", "```", ""].join("\n");
    expect(excerpts(withReadme(readme))).toEqual([
      'excerpt: chapters/s01-a/README.md:3 is not verbatim src/add.ts (from "return a - b;") — copy it again from the code',
    ]);
  });

  it("checks an indented excerpt (in a list item) without its indentation", () => {
    const good = ["1. Add:", "", "   ```ts src/add.ts", "     return a + b;", "   ```"];
    expect(excerpts(withReadme(good.join("\n")))).toEqual([]);
    const bad = ["1. Add:", "", "   ```ts src/add.ts", "     return a * b;", "   ```"];
    expect(excerpts(withReadme(bad.join("\n")))).toEqual([
      'excerpt: chapters/s01-a/README.md:3 is not verbatim src/add.ts (from "return a * b;") — copy it again from the code',
    ]);
  });

  it("flags pieces out of order and a quoted file the chapter lacks", () => {
    const readme = [
      "```ts src/add.ts",
      "  return a + b;",
      "// …",
      "export function add(a, b) {",
      "```",
      "```ts src/gone.ts",
      "x",
      "```",
    ].join("\n");
    expect(excerpts(withReadme(readme))).toEqual([
      'excerpt: chapters/s01-a/README.md:1 is not verbatim src/add.ts (from "export function add(a, b) {") — copy it again from the code',
      "excerpt: chapters/s01-a/README.md:6 quotes src/gone.ts, which the chapter does not have",
    ]);
  });
});

describe("check: README links", () => {
  const course = (readmes: Files = {}) =>
    makeCourse({
      "s01-a": chapterFiles("s01"),
      "s02-b": chapterFiles("s02", readmes),
      "s03-c": chapterFiles("s03"),
    });

  it("accepts a navigation line with the previous and next chapter in the same language", () => {
    expect(checkCourse(course())).toEqual([]);
  });

  it("flags a missing next link, a link to the other language and a link to no file", () => {
    const root = course({
      "README.md": [
        "# s02",
        "",
        "previous: [s01](../s01-a/README.md) · next: s03 (soon)",
        "",
        "See [the notes](notes.md), not `[code](example.md)`.",
        "",
      ].join("\n"),
      "README.ja.md":
        "# s02\n\n前へ: [s01](../s01-a/README.md) · 次へ: [s03](../s03-c/README.ja.md)\n",
    });
    expect(checkCourse(root)).toEqual([
      "link: chapters/s02-b/README.md has no language line: its first lines must link [日本語](README.ja.md) · [中文](README.zh.md)",
      'link: chapters/s02-b/README.md has no "next: [s03 …](../s03-c/README.md)" in its first lines',
      "link: chapters/s02-b/README.md:5 links notes.md, which does not exist",
      "link: chapters/s02-b/README.ja.md has no language line: its first lines must link [English](README.md) · [中文](README.zh.md)",
      'link: chapters/s02-b/README.ja.md has no "前へ: [s01 …](../s01-a/README.ja.md)" in its first lines',
      "link: chapters/s02-b/README.ja.md:3 links ../s01-a/README.md, a page in English; link ../s01-a/README.ja.md, the page in 日本語",
    ]);
  });

  it("keeps a Chinese README's links in Chinese: navigation, other chapters, docs", () => {
    const zh = (links: string) =>
      [
        "# s02 (zh)",
        "",
        "[English](README.md) · [日本語](README.ja.md) · 上一章: [s01](../s01-a/README.zh.md) · 下一章: [s03](../s03-c/README.zh.md)",
        "",
        links,
        "",
      ].join("\n");
    const ok = course({
      "README.zh.md": zh(
        "见 [s03](../s03-c/README.zh.md#思路) 和 [维护](../../docs/maintaining.md)。",
      ),
    });
    write(ok, "docs/maintaining.md", "# Maintaining\n");
    // A page with no Chinese version (maintaining.md) is linked as it is.
    expect(checkCourse(ok)).toEqual([]);
    const root = course({
      "README.zh.md": zh("见 [s03](../s03-c/README.md) 和 [架构](../../docs/architecture.ja.md)。")
        .replace("上一章: [s01](../s01-a/README.zh.md)", "上一章: [s01](../s01-a/README.ja.md)")
        .replace(" · [日本語](README.ja.md)", ""),
    });
    write(root, "docs/architecture.ja.md", "# 構成\n\n[English](architecture.md)\n");
    write(root, "docs/architecture.md", "# Architecture\n\n[日本語](architecture.ja.md)\n");
    write(root, "docs/architecture.zh.md", "# 架构\n\n[English](architecture.md)\n");
    expect(checkCourse(root)).toEqual([
      "link: chapters/s02-b/README.zh.md has no language line: its first lines must link [日本語](README.ja.md)",
      'link: chapters/s02-b/README.zh.md has no "上一章: [s01 …](../s01-a/README.zh.md)" in its first lines',
      "link: chapters/s02-b/README.zh.md:3 links ../s01-a/README.ja.md, a page in 日本語; link ../s01-a/README.zh.md, the page in 中文",
      "link: chapters/s02-b/README.zh.md:5 links ../s03-c/README.md, a page in English; link ../s03-c/README.zh.md, the page in 中文",
      "link: chapters/s02-b/README.zh.md:5 links ../../docs/architecture.ja.md, a page in 日本語; link ../../docs/architecture.zh.md, the page in 中文",
      // The pages outside the chapters have language lines too.
      "link: docs/architecture.ja.md has no language line: its first lines must link [中文](architecture.zh.md)",
      "link: docs/architecture.md has no language line: its first lines must link [中文](architecture.zh.md)",
      "link: docs/architecture.zh.md has no language line: its first lines must link [日本語](architecture.ja.md)",
    ]);
  });
});

describe("log", () => {
  it("lists the requests a session log recorded and prints one in full", () => {
    const root = makeCourse({});
    const line = (kind: string, scope: string, data: unknown) =>
      JSON.stringify({ ts: "2026-12-01T00:00:00.000Z", kind, scope, data });
    const user = { role: "user", content: "hi" };
    const reply = { role: "assistant", content: [{ type: "text", text: "yo" }] };
    write(
      root,
      "api.jsonl",
      [
        line("system", "main", { digest: "d1", system: "sys" }),
        line("request", "main", {
          model: "m",
          max_tokens: 5,
          system: "d1",
          tools: null,
          count: 1,
          keep: 0,
          messages: [user],
        }),
        line("response", "main", {}),
        line("request", "main", {
          model: "m",
          max_tokens: 5,
          system: "d1",
          tools: null,
          count: 3,
          keep: 1,
          messages: [reply, user],
        }),
        "",
      ].join("\n"),
    );
    const file = path.join(root, "api.jsonl");
    const list = run(["log", file]);
    expect(list.code).toBe(0);
    expect(list.out.split("\n")[1]).toMatch(
      /^2\t2026-12-01T00:00:00.000Z\tmain\t3 messages\t\d+ bytes$/,
    );
    const one = run(["log", file, "--request", "2"]);
    expect(JSON.parse(one.out)).toEqual({
      model: "m",
      max_tokens: 5,
      system: "sys",
      messages: [user, reply, user],
    });
    expect(run(["log", file, "--request", "3"])).toMatchObject({ code: 2 });
  });
});

describe("cli", () => {
  it("prints usage for --help (exit 0) and rejects an unknown command (exit 2)", () => {
    const help = run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^Usage: pnpm course <command>/);
    for (const command of ["diff", "stats", "sync", "check"])
      expect(help.out).toContain(`  ${command}`);
    const unknown = run(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('unknown command "frobnicate"');
  });

  it("rejects options that do not belong to the command", () => {
    expect(run(["stats", "--all"]).code).toBe(2);
    expect(run(["diff", "s01"]).code).toBe(2);
  });

  it("decides colour from TTY, NO_COLOR and FORCE_COLOR", () => {
    expect(colorEnabled(true, {})).toBe(true);
    expect(colorEnabled(false, {})).toBe(false);
    expect(colorEnabled(true, { NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled(false, { FORCE_COLOR: "1" })).toBe(true);
    expect(colorEnabled(false, { FORCE_COLOR: "0" })).toBe(false);
  });
});

describe("the course: the contract grows in the chapter that needs it", () => {
  const source = (chapter: Chapter, file: string) => {
    const full = path.join(chapterDir(chapter), "src", file);
    return fs.existsSync(full) ? fs.readFileSync(full, "utf8") : "";
  };
  const allSource = (chapter: Chapter) =>
    fs
      .readdirSync(path.join(chapterDir(chapter), "src"))
      .filter((file) => file.endsWith(".ts"))
      .map((file) => source(chapter, file))
      .join("\n");
  // Each turn kind, role and origin is a string literal of a union in contract.ts; each seam
  // and member is a name there. Before its chapter no contract has it, from it on every one.
  const entries = Object.entries(CONTRACT).flatMap(([kind, names]) =>
    Object.entries(names).map(([name, from]) => ({ kind, name, from: from as string })),
  );
  it.each(entries)("$kind $name: from $from on, and nowhere before", ({ kind, name, from }) => {
    const needle = ["turn", "role", "origin"].includes(kind)
      ? new RegExp(`\\| "${name}"|= "${name}"`)
      : kind === "type"
        ? new RegExp(`export interface ${name}\\b`)
        : new RegExp(`\\b${name}\\?\\(`);
    const first = Number(from.slice(1));
    for (const chapter of CHAPTERS) {
      const has = needle.test(source(chapter, "contract.ts"));
      expect({ chapter: chapter.id, has }).toEqual({
        chapter: chapter.id,
        has: Number(chapter.id.slice(1)) >= first,
      });
    }
  });

  // What only a later chapter uses is nowhere in an earlier chapter's code, comments included.
  it.each([
    { text: "beforeStop", from: "s17" },
    { text: "extendCommand", from: "s13" },
    { text: '"teammate"', from: "s13" },
    { text: "agent_name", from: "s13" },
    { text: "busy?.()", from: "s17" },
    { text: "extendClient", from: "s15" },
    { text: "CallOverrides", from: "s15" },
  ])("$text appears in no chapter's code before $from", ({ text, from }) => {
    const before = CHAPTERS.filter((c) => Number(c.id.slice(1)) < Number(from.slice(1)));
    expect(before.filter((chapter) => allSource(chapter).includes(text)).map((c) => c.id)).toEqual(
      [],
    );
    expect(allSource(CHAPTERS.find((c) => c.id === from)!)).toContain(text);
  });
});

describe("mutate --generated: the score", () => {
  const source = ["const a = 1;", "  if (x === y) return;", "const b = 2;"].join("\n");
  const mutant = (line: number, mutatorName: string, replacement: string, status: string) => ({
    id: `${line}${mutatorName}${replacement}`,
    mutatorName,
    replacement,
    status,
    location: { start: { line } },
  });
  const report = {
    files: {
      "chapters/x.ts": {
        source,
        mutants: [
          mutant(1, "NumberLiteral", "0", "Killed"),
          mutant(1, "NumberLiteral", "2", "Timeout"),
          mutant(2, "ConditionalExpression", "false", "Survived"),
          mutant(2, "ConditionalExpression", "true", "Survived"),
          mutant(3, "NumberLiteral", "0", "NoCoverage"),
          mutant(3, "NumberLiteral", "3", "CompileError"),
        ],
      },
    },
  };
  const equivalent = {
    module: "x",
    line: "if (x === y) return;",
    mutator: "ConditionalExpression",
    replacement: "false",
    reason: "test",
  };

  it("leaves out the listed equivalents (same trimmed line, mutator and replacement) and compile errors", () => {
    const score = scoreOf("x", report, [equivalent, { ...equivalent, module: "other" }], 50);
    expect(score).toMatchObject({
      killed: 1,
      timeout: 1,
      survived: 1,
      noCoverage: 1,
      equivalent: 1,
    });
    expect(score.score).toBe(50);
    expect(score.open).toEqual([
      "2: ConditionalExpression → true  (if (x === y) return;)",
      "3: NumberLiteral → 0  (const b = 2;)",
    ]);
    expect(formatScores([score])).toContain("| x | 2 | 2 | 1 | 50.0 % | 50 % | met |");
    expect(formatScores([{ ...score, goal: 51 }])).toContain("| 51 % | BELOW |");
  });

  it("reads an equivalent only where its line, mutator and replacement all match", () => {
    for (const change of [
      { line: "if (x === z) return;" },
      { mutator: "EqualityOperator" },
      { replacement: "x !== y" },
    ]) {
      expect(scoreOf("x", report, [{ ...equivalent, ...change }], 50).equivalent).toBe(0);
    }
  });

  it("gives every listed equivalent a module, a line still in its file, the mutation and a reason", () => {
    const root = path.resolve(import.meta.dirname, "..");
    for (const entry of readEquivalents()) {
      const module = MODULES[entry.module];
      expect(module, entry.module).toBeDefined();
      const lines = fs.readFileSync(path.join(root, module!.file), "utf8").split("\n");
      expect(
        lines.map((line) => line.trim()),
        JSON.stringify(entry),
      ).toContain(entry.line);
      for (const field of ["line", "mutator", "replacement", "reason"] as const) {
        expect(entry[field], JSON.stringify(entry)).toMatch(/\S/);
      }
    }
  });
});
