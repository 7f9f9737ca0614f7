/**
 * `pnpm course exercise`: the list, a start that never overwrites a learner's work, and a
 * clear message for every bad input (an unknown id, a missing copy, a copy that does not
 * load, a solution that no longer applies). That each check fails on the untouched start
 * and passes on the reference solution is `pnpm course exercise verify-all`'s job (its own
 * CI step: it runs every check three times).
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_ROOT, type Io, main } from "../scripts/course.ts";
import { checkExercises, listExercises } from "../scripts/exercise.ts";
import { tempWorkspace } from "./helpers/run.ts";

/** Runs `pnpm course exercise …` in-process; its exit code and what it wrote. */
async function course(...argv: string[]) {
  let out = "";
  let err = "";
  const io: Io = { write: (text) => (out += text), error: (text) => (err += text), color: false };
  const code = await main(["exercise", ...argv], io);
  return { code, out, err };
}

describe("pnpm course exercise", () => {
  it("lists every exercise with its id, chapter folder and title, two at least for s02 and s14", async () => {
    const { code, out } = await course("list");
    expect(code).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines).toHaveLength(listExercises(DEFAULT_ROOT).length);
    expect(lines).toContain("s02.1  s02-tools        A grep tool with a path target");
    for (const chapter of ["s02", "s14"]) {
      expect(lines.filter((line) => line.startsWith(`${chapter}.`)).length).toBeGreaterThanOrEqual(
        2,
      );
    }
  });

  it("names an unknown exercise and the ones its chapter has", async () => {
    const { code, err } = await course("start", "s02.9");
    expect(code).toBe(2);
    expect(err).toMatch(
      /^course exercise start: no exercise "s02\.9"; s02 has s02\.1, s02\.2 .*\(pnpm course exercise list shows them all\)\n$/,
    );
  });

  it("starts a copy that runs with the chapter's packages, and never overwrites one", async () => {
    const dir = path.join(tempWorkspace("exercise"), "mine");
    const first = await course("start", "s02.1", "--dir", dir);
    expect(first.code).toBe(0);
    expect(first.out).toContain(`The chapter s02 is copied to ${dir}.`);
    expect(first.out).toContain("When you think it works: pnpm course exercise check s02.1 --dir");
    expect(fs.readFileSync(path.join(dir, "EXERCISE.md"), "utf8")).toMatch(
      /^# s02\.1: A grep tool/,
    );
    expect(fs.existsSync(path.join(dir, "EXERCISE.ja.md"))).toBe(true);
    expect(fs.readFileSync(path.join(dir, "EXERCISE.zh.md"), "utf8")).toMatch(/^# s02\.1: /);
    expect(fs.readFileSync(path.join(dir, "src/tools.ts"), "utf8")).toBe(
      fs.readFileSync(path.join(DEFAULT_ROOT, "chapters/s02-tools/src/tools.ts"), "utf8"),
    );
    expect(fs.realpathSync(path.join(dir, "node_modules"))).toBe(
      fs.realpathSync(path.join(DEFAULT_ROOT, "chapters/s02-tools/node_modules")),
    );
    expect(JSON.parse(fs.readFileSync(path.join(dir, "tsconfig.json"), "utf8")).extends).toBe(
      path.join(DEFAULT_ROOT, "tsconfig.base.json"),
    );
    fs.writeFileSync(path.join(dir, "src/tools.ts"), "// my work\n");
    const again = await course("start", "s02.1", "--dir", dir);
    expect(again.code).toBe(2);
    expect(again.err).toContain(
      `${dir} already exists and is not empty: your work stays as it is.`,
    );
    expect(fs.readFileSync(path.join(dir, "src/tools.ts"), "utf8")).toBe("// my work\n");
  });

  it("says how to start when there is no copy to check or compare", async () => {
    const dir = path.join(tempWorkspace("exercise"), "nothing-here");
    for (const command of ["check", "diff"]) {
      const { code, err } = await course(command, "s14.1", "--dir", dir);
      expect(code).toBe(2);
      expect(err).toContain(
        `no copy of s14 at ${dir}: start one with \`pnpm course exercise start s14.1`,
      );
    }
  });

  it("reports a copy that does not load instead of running its checks", async () => {
    const dir = path.join(tempWorkspace("exercise"), "broken");
    await course("start", "s02.1", "--dir", dir);
    fs.appendFileSync(path.join(dir, "src/tools.ts"), "\nexport const broken = ;\n");
    const { code, out } = await course("check", "s02.1", "--dir", dir);
    expect(code).toBe(1);
    expect(out).toContain("✗ the copy does not load (node --import tsx/esm src/main.ts):");
    expect(out).toMatch(/tools\.ts/);
  });

  it("refuses a command it does not have, a missing id and options that do not apply", async () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /^course exercise: which command\?\n {2}exercise list/],
      [["run", "s02.1"], /^course exercise: unknown command "run"/],
      [["check"], /^course exercise: check takes 1 argument\(s\), got 0/],
      [
        ["check", "s02.1", "--solution", "--dir", "x"],
        /--solution applies only to check, without --dir/,
      ],
      [["list", "--dir", "x"], /^course exercise list: --dir does not apply here/],
    ];
    for (const [argv, message] of cases) {
      const { code, err } = await course(...argv);
      expect(code).toBe(2);
      expect(err).toMatch(message);
    }
  });

  it("course check fails when a solution no longer applies to its chapter", () => {
    expect(checkExercises(DEFAULT_ROOT)).toEqual([]);
    const root = tempWorkspace("exercise-root");
    fs.symlinkSync(path.join(DEFAULT_ROOT, "chapters"), path.join(root, "chapters"));
    const exercise = path.join(root, "exercises", "s02.1-grep");
    fs.cpSync(path.join(DEFAULT_ROOT, "exercises", "s02.1-grep"), exercise, { recursive: true });
    const patch = path.join(exercise, "solution.diff");
    fs.writeFileSync(
      patch,
      fs
        .readFileSync(patch, "utf8")
        .replace("// The mechanism: the four", "// A line the chapter does not have"),
    );
    fs.rmSync(path.join(exercise, "README.zh.md"));
    fs.mkdirSync(path.join(root, "exercises", "grep"));
    fs.mkdirSync(path.join(root, "exercises", "s02.9-half-written"));
    const problems = checkExercises(root);
    expect(problems.slice(0, 2).sort()).toEqual([
      "exercise: exercises/grep is not named <id>-<slug> (s02.1-grep)",
      'exercise: exercises/s02.9-half-written/exercise.json is missing or has no "title"',
    ]);
    expect(problems[2]).toBe("exercise: exercises/s02.1-grep/README.zh.md is missing");
    expect(problems[3]).toMatch(
      /^exercise: s02\.1-grep\/solution\.diff does not apply to s02: .*patch failed.* — update the solution to the chapter's code$/s,
    );
  });
});
