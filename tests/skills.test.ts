/**
 * Skills, against every chapter from s07: the frontmatter parser, the scan of
 * skills/ and .claude/skills/ with its fallbacks and diagnostics, the catalog and system
 * prompt section, and the load_skill tool.
 */
import fs, { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { checkInput, type SessionLog } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as FrontmatterModule from "../chapters/s07-skills/src/frontmatter.ts";
import type * as SkillsModule from "../chapters/s07-skills/src/skills.ts";
import { BASE_TOOLS, carried, chaptersFrom, importChapter, moduleVersions } from "./chapters.ts";
import {
  lastToolResults,
  runChapter,
  sessionLog,
  tempWorkspace,
  toolNames,
  writeFiles,
} from "./helpers/run.ts";

/**
 * Root reads a chmod-000 file anyway, so under root `readFileSync` is made to refuse such a
 * file the way the kernel refuses everyone else (EACCES), for the length of `body` only;
 * other users get the real refusal. The chapters import `node:fs` natively, so patching the
 * builtin and syncing its ESM exports reaches them without reloading any module.
 */
function refusingUnreadable<T>(body: () => T): T {
  if (process.getuid?.() !== 0) return body();
  const real = fs.readFileSync;
  fs.readFileSync = function readFileSync(this: unknown, ...args: unknown[]): unknown {
    const [file] = args;
    const mode =
      typeof file === "string" ? fs.statSync(file, { throwIfNoEntry: false })?.mode : 0o444;
    if (((mode ?? 0o444) & 0o444) === 0) {
      throw Object.assign(new Error(`EACCES: permission denied, open '${String(file)}'`), {
        code: "EACCES",
      });
    }
    return Reflect.apply(real, this, args);
  } as typeof real;
  syncBuiltinESMExports();
  try {
    return body();
  } finally {
    fs.readFileSync = real;
    syncBuiltinESMExports();
  }
}

const REPO = path.resolve(new URL("..", import.meta.url).pathname);
const context = { workdir: "/", scope: "main", signal: new AbortController().signal };

/** A session log that keeps its transcript sections. */
function memoryLog(): SessionLog & { sections: string[] } {
  const sections: string[] = [];
  return {
    sessionId: "test",
    apiPath: "",
    transcriptPath: "",
    sections,
    record() {},
    request() {},
    transcript(title, text) {
      sections.push(`${title}: ${text}`);
    },
    redact: (text) => text,
  };
}

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(
  moduleVersions("s07", ["skills.ts", "frontmatter.ts"]).map((c) => c.id),
);

const SKILLS = moduleVersions("s07", ["skills.ts", "frontmatter.ts"]);

describe.each(carried(chaptersFrom("s07"), MODULE_CHAPTERS, SKILLS))("$id skills", (chapter) => {
  let skills: typeof SkillsModule;
  let frontmatter: typeof FrontmatterModule;
  beforeAll(async () => {
    skills = await importChapter<typeof SkillsModule>(chapter, "skills.ts");
    frontmatter = await importChapter<typeof FrontmatterModule>(chapter, "frontmatter.ts");
  });

  /** A workspace holding `files`, scanned. */
  function scan(files: Record<string, string>) {
    const ws = tempWorkspace("skills");
    writeFiles(ws, files);
    return { ws, ...skills.loadSkills(ws) };
  }
  const names = (list: SkillsModule.Skill[]) => list.map((skill) => skill.name);
  const skillFile = (name: string, description: string, body = "# Body") =>
    `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

  if (MODULE_CHAPTERS.has(chapter.id)) {
    describe("parseFrontmatter", () => {
      it("splits meta from the trimmed body and unquotes values", () => {
        expect(
          frontmatter.parseFrontmatter('---\nname: "quoted"\ndescription: d\n---\n\n# Body\n\n'),
        ).toEqual({ meta: { name: "quoted", description: "d" }, body: "# Body", problem: null });
      });

      it("treats text without an opening line of exactly --- as all body, untrimmed", () => {
        for (const text of ["\n# Title\n", "---not frontmatter\n---\n# Body", " ---\n---\n", ""]) {
          expect(frontmatter.parseFrontmatter(text)).toEqual({
            meta: {},
            body: text,
            problem: null,
          });
        }
      });

      it.each([
        ["LF", "\n"],
        ["CRLF", "\r\n"],
      ])("keeps an indented --- inside a block scalar (%s)", (_name, eol) => {
        const text = ["---", "description: |", "  before", "  ---", "  after", "---", "# Body", ""];
        expect(frontmatter.parseFrontmatter(text.join(eol))).toEqual({
          meta: { description: "before\n---\nafter\n" },
          body: "# Body",
          problem: null,
        });
      });

      it("closes only on a whole --- line: a---b stays in the value", () => {
        expect(frontmatter.parseFrontmatter("---\ndescription: a---b\n---\nBody")).toEqual({
          meta: { description: "a---b" },
          body: "Body",
          problem: null,
        });
      });

      it("keeps a later standalone --- in the body", () => {
        expect(frontmatter.parseFrontmatter("---\nname: x\n---\nintro\n---\nmore\n").body).toBe(
          "intro\n---\nmore",
        );
      });

      it("closes at the first column-0 --- even right after a block scalar line, as YAML does", () => {
        const text = "---\ndescription: |\n  before\n---\n  after\n---\n# Body\n";
        expect(frontmatter.parseFrontmatter(text)).toEqual({
          meta: { description: "before\n" },
          body: "after\n---\n# Body",
          problem: null,
        });
      });

      it("keeps a block scalar's YAML meaning (trailing newline included)", () => {
        const text = "---\ndescription: |\n  First line.\n  Second line.\n---\n";
        expect(frontmatter.parseFrontmatter(text).meta).toEqual({
          description: "First line.\nSecond line.\n",
        });
      });

      it("reads YAML 1.2's core schema: date-like and yes/no values stay strings", () => {
        const text = "---\ndescription: 2024-01-01\nflag: yes\ncount: 3\n---\n";
        expect(frontmatter.parseFrontmatter(text).meta).toEqual({
          description: "2024-01-01",
          flag: "yes",
          count: 3,
        });
      });

      it("treats empty or comment-only frontmatter as no metadata, not a problem", () => {
        expect(frontmatter.parseFrontmatter("---\n---\nBody")).toEqual({
          meta: {},
          body: "Body",
          problem: null,
        });
        expect(frontmatter.parseFrontmatter("---\n# just a comment\n---\nBody").meta).toEqual({});
      });

      it("reports unterminated frontmatter and keeps the whole text as body", () => {
        const text = "---\nname: x\n# Body\n";
        expect(frontmatter.parseFrontmatter(text)).toEqual({
          meta: null,
          body: text,
          problem: "frontmatter has no closing '---' line",
        });
      });

      it.each([
        ["LF", "\n"],
        ["CRLF", "\r\n"],
      ])("reports invalid YAML with the file's line and column (%s)", (_name, eol) => {
        const text = ["---", "name: ok", "key: [unclosed", "---", "Body after", ""].join(eol);
        expect(frontmatter.parseFrontmatter(text)).toEqual({
          meta: null,
          body: "Body after",
          problem:
            "frontmatter is not valid YAML (line 3, column 15: Flow sequence in block " +
            "collection must be sufficiently indented and end with a ])",
        });
      });

      it("reports a duplicate key as invalid YAML", () => {
        expect(frontmatter.parseFrontmatter("---\nname: a\nname: b\n---\n").problem).toBe(
          "frontmatter is not valid YAML (line 3, column 1: Map keys must be unique)",
        );
      });

      it("reports frontmatter that is not a mapping", () => {
        expect(frontmatter.parseFrontmatter("---\n- a\n- b\n---\nBody")).toEqual({
          meta: null,
          body: "Body",
          problem: "frontmatter is a list, not a mapping",
        });
        expect(frontmatter.parseFrontmatter("---\njust words\n---\n").problem).toBe(
          "frontmatter is a string, not a mapping",
        );
      });
    });

    describe("loadSkills", () => {
      it("finds nothing, silently, when neither root exists", () => {
        expect(skills.loadSkills(tempWorkspace("empty"))).toEqual({ skills: [], problems: [] });
      });

      it("captures name, collapsed block-scalar description, path and the whole text", () => {
        const text =
          "---\nname: code-review\ndescription: |\n  Review code for bugs,\n" +
          "  regressions, and missing tests.\n---\n# Code review\n\nBODY-MARKER-7f3a\n";
        const { ws, skills: found, problems } = scan({ "skills/code-review/SKILL.md": text });
        expect(found).toEqual([
          {
            name: "code-review",
            description: "Review code for bugs, regressions, and missing tests.",
            path: path.join(ws, "skills/code-review/SKILL.md"),
            text,
          },
        ]);
        expect(problems).toEqual([]);
        expect(skills.catalog(found)).toBe(
          "- code-review: Review code for bugs, regressions, and missing tests.",
        );
      });

      it("reads SKILL.md as UTF-8", () => {
        const text = skillFile("zh", "处理中文内容");
        const { skills: found } = scan({ "skills/zh/SKILL.md": text });
        expect(found[0]?.description).toBe("处理中文内容");
        expect(found[0]?.text).toBe(text);
      });

      it("passes over hidden folders, loose files and folders without SKILL.md silently", () => {
        const { skills: found, problems } = scan({
          "skills/pdf/SKILL.md": skillFile("pdf", "PDF work"),
          "skills/.hidden/SKILL.md": skillFile("hidden", "never"),
          "skills/notes.md": "loose",
          "skills/SKILL.md": skillFile("loose", "never"),
          "skills/empty-folder/README.md": "no SKILL.md here",
          "skills/nested/deeper/SKILL.md": skillFile("nested", "not a direct child"),
        });
        expect(names(found)).toEqual(["pdf"]);
        expect(problems).toEqual([]);
      });

      it("orders folders by code point within a root, skills/ before .claude/skills/", () => {
        const { skills: found } = scan({
          "skills/a-skill/SKILL.md": skillFile("a-skill", "lower"),
          "skills/B-skill/SKILL.md": skillFile("B-skill", "upper"),
          "skills/\u{1F600}-skill/SKILL.md": skillFile("emoji", "astral"),
          "skills/\uFF01-skill/SKILL.md": skillFile("fullwidth", "BMP"),
          ".claude/skills/0-first/SKILL.md": skillFile("claude-skill", "second root"),
        });
        expect(names(found)).toEqual(["B-skill", "a-skill", "fullwidth", "emoji", "claude-skill"]);
      });

      it("keeps the first of two skills with one name in a root and reports the second", () => {
        const { skills: found, problems } = scan({
          "skills/one/SKILL.md": skillFile("same", "first"),
          "skills/two/SKILL.md": skillFile("same", "second"),
        });
        expect(found.map((skill) => skill.description)).toEqual(["first"]);
        expect(problems).toEqual([
          "duplicate skill name 'same' in skills/two/SKILL.md ignored (kept skills/one/SKILL.md)",
        ]);
      });

      it("keeps skills/ over .claude/skills/ on a name clash and reports it", () => {
        const { skills: found, problems } = scan({
          "skills/review/SKILL.md": skillFile("review", "from skills"),
          ".claude/skills/review/SKILL.md": skillFile("review", "from .claude"),
          ".claude/skills/deploy/SKILL.md": skillFile("deploy", "only in .claude"),
        });
        expect(found.map((skill) => `${skill.name}=${skill.description}`)).toEqual([
          "review=from skills",
          "deploy=only in .claude",
        ]);
        expect(problems).toEqual([
          "duplicate skill name 'review' in .claude/skills/review/SKILL.md ignored " +
            "(kept skills/review/SKILL.md)",
        ]);
      });

      describe("fallbacks, each with its diagnostic", () => {
        it.each([
          [
            "empty name and description",
            "---\nname:\ndescription:\n---\n# Body description\n",
            "Body description",
            [
              "name is empty; using the folder name 'blank'",
              "description is empty; using the body's first line",
            ],
          ],
          [
            "blank strings",
            '---\nname: "  "\ndescription: " "\n---\nFirst line\nsecond\n',
            "First line",
            [
              "name is empty; using the folder name 'blank'",
              "description is empty; using the body's first line",
            ],
          ],
          [
            "list values",
            "---\nname: [bad]\ndescription: [bad]\n---\n# Typed fallback\n",
            "Typed fallback",
            [
              "name is a list, not a string; using the folder name 'blank'",
              "description is a list, not a string; using the body's first line",
            ],
          ],
          [
            "numbers",
            "---\nname: 123\ndescription: 456\n---\n## Numeric\n",
            "Numeric",
            [
              "name is a number, not a string; using the folder name 'blank'",
              "description is a number, not a string; using the body's first line",
            ],
          ],
          [
            "a mapping and a boolean",
            "---\nname: {a: 1}\ndescription: true\n---\nBody\n",
            "Body",
            [
              "name is a mapping, not a string; using the folder name 'blank'",
              "description is a boolean, not a string; using the body's first line",
            ],
          ],
          [
            "no frontmatter",
            "# PDF tools\n\nUse pdftotext.\n",
            "PDF tools",
            [
              "name is missing; using the folder name 'blank'",
              "description is missing; using the body's first line",
            ],
          ],
          [
            "invalid YAML",
            "---\nname: ok\nkey: [unclosed\n---\n# After the delimiter\n",
            "After the delimiter",
            [
              "frontmatter is not valid YAML (line 3, column 15: Flow sequence in block collection " +
                "must be sufficiently indented and end with a ]); using the folder name and the " +
                "body's first line",
            ],
          ],
          [
            "a list as frontmatter",
            "---\n- name: listed\n---\nBody\n",
            "Body",
            [
              "frontmatter is a list, not a mapping; using the folder name and the body's first line",
            ],
          ],
          [
            "a __proto__ key",
            "---\n__proto__:\n  name: evil\ndescription: ok\n---\n",
            "ok",
            ["name is missing; using the folder name 'blank'"],
          ],
        ])("%s", (_case, text, description, expected) => {
          const { skills: found, problems } = scan({ "skills/blank/SKILL.md": text });
          expect(found.map((skill) => [skill.name, skill.description])).toEqual([
            ["blank", description],
          ]);
          expect(problems).toEqual(expected.map((problem) => `skills/blank/SKILL.md: ${problem}`));
        });

        it("takes the whole file's first line when the frontmatter is unterminated", () => {
          const { skills: found, problems } = scan({ "skills/open/SKILL.md": "---\nname: x\n" });
          expect(found.map((skill) => [skill.name, skill.description])).toEqual([["open", "---"]]);
          expect(problems).toEqual([
            "skills/open/SKILL.md: frontmatter has no closing '---' line; using the folder name " +
              "and the body's first line",
          ]);
        });

        it("reports an empty final description (empty body, or a blank first line)", () => {
          const { skills: found, problems } = scan({
            "skills/empty-body/SKILL.md": "---\nname: empty-skill\n---\n",
            "skills/leading-blank/SKILL.md": "\n# Heading after a blank line\n",
          });
          expect(found.map((skill) => [skill.name, skill.description])).toEqual([
            ["empty-skill", ""],
            ["leading-blank", ""],
          ]);
          expect(problems).toEqual([
            "skills/empty-body/SKILL.md: description is missing; using the body's first line",
            "skills/empty-body/SKILL.md: description is empty; the model cannot tell when to " +
              "load this skill",
            "skills/leading-blank/SKILL.md: name is missing; using the folder name 'leading-blank'",
            "skills/leading-blank/SKILL.md: description is missing; using the body's first line",
            "skills/leading-blank/SKILL.md: description is empty; the model cannot tell when to " +
              "load this skill",
          ]);
          expect(skills.catalog(found)).toBe("- empty-skill:\n- leading-blank:");
        });

        it("keeps a date-like description as a string, without a diagnostic", () => {
          const { skills: found, problems } = scan({
            "skills/dated/SKILL.md": "---\nname: dated\ndescription: 2024-01-01\n---\n",
          });
          expect(found[0]?.description).toBe("2024-01-01");
          expect(problems).toEqual([]);
        });
      });

      describe("what is skipped with a warning", () => {
        it("skips a SKILL.md symlinked outside its root", () => {
          const ws = tempWorkspace("escape");
          writeFiles(ws, {
            "outside-skill.md": skillFile("evil", "outside"),
            "skills/good/SKILL.md": skillFile("good", "inside"),
          });
          mkdirSync(path.join(ws, "skills/evil"));
          symlinkSync("../../outside-skill.md", path.join(ws, "skills/evil/SKILL.md"));
          const { skills: found, problems } = skills.loadSkills(ws);
          expect(names(found)).toEqual(["good"]);
          expect(problems).toEqual([
            `skills/evil/SKILL.md: resolves to ${ws}/outside-skill.md, outside skills/; skipped`,
          ]);
        });

        it("skips a skill folder symlinked outside its root", () => {
          const ws = tempWorkspace("escape-dir");
          const elsewhere = tempWorkspace("elsewhere");
          writeFiles(elsewhere, { "ext/SKILL.md": skillFile("ext", "outside") });
          mkdirSync(path.join(ws, ".claude/skills"), { recursive: true });
          symlinkSync(path.join(elsewhere, "ext"), path.join(ws, ".claude/skills/ext"));
          expect(skills.loadSkills(ws)).toEqual({
            skills: [],
            problems: [
              `.claude/skills/ext/SKILL.md: resolves to ${elsewhere}/ext/SKILL.md, outside ` +
                ".claude/skills/; skipped",
            ],
          });
        });

        it("accepts a symlinked skill folder that resolves inside its root", () => {
          const ws = tempWorkspace("inside-dir");
          writeFiles(ws, { "skills/library/deep/SKILL.md": skillFile("deep", "linked in") });
          symlinkSync("library/deep", path.join(ws, "skills/deep"));
          expect(skills.loadSkills(ws)).toEqual({
            skills: [
              {
                name: "deep",
                description: "linked in",
                path: path.join(ws, "skills/deep/SKILL.md"),
                text: skillFile("deep", "linked in"),
              },
            ],
            problems: [],
          });
        });

        it("skips a SKILL.md that is not a regular file, or a broken link", () => {
          const ws = tempWorkspace("odd");
          writeFiles(ws, { "skills/ok/SKILL.md": skillFile("ok", "fine") });
          mkdirSync(path.join(ws, "skills/dir/SKILL.md"), { recursive: true });
          mkdirSync(path.join(ws, "skills/dangling"));
          symlinkSync("missing.md", path.join(ws, "skills/dangling/SKILL.md"));
          const { skills: found, problems } = skills.loadSkills(ws);
          expect(names(found)).toEqual(["ok"]);
          expect(problems).toEqual([
            "skills/dangling/SKILL.md: cannot be resolved (ENOENT); skipped",
            "skills/dir/SKILL.md: is not a regular file; skipped",
          ]);
        });

        it("skips an unreadable SKILL.md and still loads the rest", () => {
          const ws = tempWorkspace("locked");
          writeFiles(ws, {
            "skills/locked/SKILL.md": skillFile("locked", "secret"),
            "skills/open/SKILL.md": skillFile("open", "readable"),
          });
          chmodSync(path.join(ws, "skills/locked/SKILL.md"), 0o000);
          const { skills: found, problems } = refusingUnreadable(() => skills.loadSkills(ws));
          expect(names(found)).toEqual(["open"]);
          expect(problems).toEqual(["skills/locked/SKILL.md: cannot be read (EACCES); skipped"]);
        });

        it("treats a file where a root should be as no skills", () => {
          const { skills: found, problems } = scan({ skills: "not a folder" });
          expect(found).toEqual([]);
          expect(problems).toEqual([]);
        });
      });

      it("scans once: later edits do not reach load_skill", async () => {
        const original = skillFile("pdf", "PDF work");
        const { ws, skills: found } = scan({ "skills/pdf/SKILL.md": original });
        writeFileSync(path.join(ws, "skills/pdf/SKILL.md"), skillFile("pdf", "edited"));
        const tool = skills.loadSkillTool(found);
        const folder = path.join(ws, "skills", "pdf");
        expect(await tool.run({ name: "pdf" }, context)).toEqual({
          content: `Base directory for this skill: ${folder}\n\n${original}`,
        });
      });
    });

    describe("catalog and prompt section", () => {
      const skill = (name: string, description: string): SkillsModule.Skill => ({
        name,
        description,
        path: `/ws/skills/${name}/SKILL.md`,
        text: `---\nname: ${name}\n---\nBODY-MARKER-${name}\n`,
      });

      it("lists one trimmed line per skill, or (no skills found)", () => {
        expect(skills.catalog([skill("b", "Second"), skill("a", "First "), skill("c", "")])).toBe(
          "- b: Second\n- a: First\n- c:",
        );
        expect(skills.catalog([])).toBe("(no skills found)");
      });

      it("puts the catalog, never a body, in the Skills section", () => {
        const section = skills.skillsSection([skill("pdf", "PDF work"), skill("x", "Other")]);
        expect(section).toEqual({
          id: "skills",
          text:
            "Skills available:\n- pdf: PDF work\n- x: Other\n" +
            "Use load_skill to read the full instructions when a skill applies.",
        });
        expect(section.text).not.toContain("BODY-MARKER");
        expect(skills.skillsSection([]).text).toBe(
          "Skills available:\n(no skills found)\n" +
            "Use load_skill to read the full instructions when a skill applies.",
        );
      });

      it("keeps a scanned skill's body out of the section", () => {
        const { skills: found } = scan({
          "skills/code-review/SKILL.md": skillFile("code-review", "Reviews", "UNIQUE-BODY-91c2"),
        });
        expect(skills.skillsSection(found).text).not.toContain("UNIQUE-BODY-91c2");
      });

      it("describes the catalog and then the diagnostics for /skills", () => {
        expect(skills.describeSkills([skill("pdf", "PDF work")], ["a: one", "b: two"])).toBe(
          "- pdf: PDF work\n\n[skills] a: one\n[skills] b: two",
        );
        expect(skills.describeSkills([], [])).toBe("(no skills found)");
      });
    });

    describe("load_skill", () => {
      const pdfText = "---\nname: pdf\ndescription: PDF work\n---\n# PDF\nSteps.\n";
      let found: SkillsModule.Skill[];
      beforeAll(() => {
        found = scan({
          "skills/code-review/SKILL.md": skillFile("code-review", "Reviews"),
          "skills/pdf/SKILL.md": pdfText,
        }).skills;
      });

      it("is Claude Code's Skill tool with a required string name", () => {
        const tool = skills.loadSkillTool(found);
        expect([tool.name, tool.aliases]).toEqual(["load_skill", ["Skill"]]);
        expect(tool.input_schema.required).toEqual(["name"]);
        expect(tool.input_schema.properties).toMatchObject({ name: { type: "string" } });
      });

      it("returns the skill's folder, then the whole file, frontmatter included, every time", async () => {
        const tool = skills.loadSkillTool(found);
        const folder = path.dirname(found.find((skill) => skill.name === "pdf")!.path);
        expect(path.isAbsolute(folder)).toBe(true);
        const loaded = { content: `Base directory for this skill: ${folder}\n\n${pdfText}` };
        expect(await tool.run({ name: "pdf" }, context)).toEqual(loaded);
        expect(await tool.run({ name: "pdf" }, context)).toEqual(loaded);
      });

      it.each(["ghost", "PDF", "constructor", "toString", "__proto__", "../../etc/passwd"])(
        "treats '%s' as unknown and lists the names",
        async (name) => {
          const tool = skills.loadSkillTool(found);
          expect(await tool.run({ name }, context)).toEqual({
            content: `Error: Unknown skill '${name}'. Available: code-review, pdf`,
            isError: true,
          });
        },
      );

      it("says none when there are no skills", async () => {
        expect(await skills.loadSkillTool([]).run({ name: "pdf" }, context)).toEqual({
          content: "Error: Unknown skill 'pdf'. Available: none",
          isError: true,
        });
      });

      it("rejects bad input with the invalid-input error", () => {
        const tool = skills.loadSkillTool(found);
        expect(checkInput(tool, { name: 1 })).toEqual({
          ok: false,
          error: "Error: Invalid input for load_skill: name must be a string",
        });
        expect(checkInput(tool, {})).toEqual({
          ok: false,
          error: "Error: Invalid input for load_skill: name is required",
        });
        for (const input of [null, ["pdf"], '["pdf"]']) {
          expect(checkInput(tool, input)).toEqual({
            ok: false,
            error: "Error: Invalid input for load_skill: input must be an object",
          });
        }
        expect(checkInput(tool, { name: "pdf" })).toEqual({ ok: true, value: { name: "pdf" } });
      });

      it("logs each load and each miss to the session transcript", async () => {
        const log = memoryLog();
        const tool = skills.loadSkillTool(found, log);
        await tool.run({ name: "pdf" }, context);
        await tool.run({ name: "ghost" }, context);
        expect(log.sections).toEqual([
          `SKILL: load pdf (${pdfText.length} chars)`,
          "SKILL: not found: ghost",
        ]);
      });
    });

    describe("the repository's sample skills", () => {
      it("load without problems, in folder order, one with a multi-line description", () => {
        const { skills: found, problems } = skills.loadSkills(REPO);
        expect(problems).toEqual([]);
        expect(names(found)).toEqual(["agent-builder", "code-review", "mcp-builder", "pdf"]);
        const multiLine = found.filter((skill) => {
          const meta = frontmatter.parseFrontmatter(skill.text).meta;
          return typeof meta?.description === "string" && meta.description.trim().includes("\n");
        });
        expect(multiLine.length).toBeGreaterThan(0);
        for (const skill of found) expect(skill.description).not.toMatch(/\n|^\s|\s$/);
      });
    });
  }

  // Each test runs its own chapter, workspace and server: they wait side by side.
  describe.concurrent("through the chapter", () => {
    const BODY_MARKER = "BODY-MARKER-7f3a";
    const skillText = `---\nname: deploy\ndescription: Ship the app to staging. Use when asked to deploy.\n---\n# Deploy\n\n${BODY_MARKER}: run make deploy.\n`;
    const isChild = (r: Anthropic.MessageCreateParams) => !toolNames(r).includes("task");

    it("puts the catalog line in the system prompt, never the body; load_skill returns the folder and the whole file", async () => {
      const run = await runChapter(chapter, {
        files: {
          "skills/deploy/SKILL.md": skillText,
          ".claude/skills/notes/SKILL.md": "# Take notes\nKeep notes.\n",
        },
        prompts: ["deploy it"],
        steps: [
          {
            when: (r) => !isChild(r) && r.messages.length === 1,
            reply: reply(
              toolUse("load_skill", { name: "deploy" }),
              toolUse("task", { prompt: "Check the build folder." }),
            ),
          },
          { when: isChild, reply: reply(text("build folder is fine")) },
          {
            when: (r) => !isChild(r) && lastToolResults(r).length > 0,
            reply: reply(text("deployed")),
          },
        ],
      });
      const [first] = run.requests;
      expect(toolNames(first!).slice(0, 8)).toEqual([
        ...BASE_TOOLS,
        "todo_write",
        "task",
        "load_skill",
      ]);
      expect(first!.system).toContain(
        "Skills available:\n- deploy: Ship the app to staging. Use when asked to deploy.\n- notes: Take notes\n" +
          "Use load_skill to read the full instructions when a skill applies.",
      );
      for (const request of run.requests) expect(String(request.system)).not.toContain(BODY_MARKER);
      const child = run.requests.filter(isChild);
      expect(child).toHaveLength(1);
      expect(toolNames(child[0]!)).not.toContain("load_skill");
      expect(JSON.stringify(child[0])).not.toContain("Skills available");
      expect(lastToolResults(run.requests.at(-1)!)[0]?.content).toBe(
        `Base directory for this skill: ${path.join(run.workdir, "skills", "deploy")}\n\n${skillText}`,
      );
      expect(run.output).toContain("[skills] 2 skill(s): deploy, notes");
      expect(sessionLog(run.workdir).transcript).toContain(
        `load deploy (${skillText.length} chars)`,
      );
    });

    it("lists the catalog and the loading problems with /skills, without calling the model", async () => {
      const run = await runChapter(chapter, {
        files: {
          "skills/deploy/SKILL.md": skillText,
          "skills/broken/SKILL.md": "---\nname: [\n---\n# Broken\n",
        },
        prompts: ["/skills"],
        steps: [],
      });
      expect(run.requests).toHaveLength(0);
      expect(run.output).toContain("- broken: Broken\n- deploy: Ship the app to staging.");
      expect(run.output).toMatch(
        /\[skills\] skills\/broken\/SKILL\.md: frontmatter is not valid YAML/,
      );
    });

    it("prints no [skills] line at start when the workspace has no skills", async () => {
      const run = await runChapter(chapter, { prompts: [], steps: [] });
      expect(run.output).toContain(`${chapter.id}: ${chapter.title}`);
      expect(run.output).not.toContain("[skills]");
    });
  });
});
