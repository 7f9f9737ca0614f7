/**
 * `pnpm course exercise …`: exercises a learner can check.
 *
 *   exercises/<id>-<slug>/           one exercise (id: s02.1 = chapter s02, first exercise)
 *     exercise.json                  {"title": …, "hints": {"<check name>": "<hint>"}}
 *     README.md, README.ja.md,       the statement: the goal, what to change, what the check
 *     README.zh.md                   runs, hints
 *     check.ts                       vitest checks that drive the copy through its `main`
 *     solution.diff                  the reference solution, a patch against the chapter
 *
 *   list                       every exercise: id, chapter, title
 *   start <id> [--dir DIR]     the chapter copied to DIR (default exercises/work/<id>, which
 *                              git ignores), its node_modules linked, the statement beside it
 *   check <id> [--dir DIR]     the checks against that copy: each passed or failed, and the
 *                              hint for the first failure
 *   check <id> --solution      the same against a copy with the reference solution applied
 *   diff <id> [--dir DIR]      your change to the chapter, then the reference solution's
 *   verify-all                 for every exercise: the untouched start fails its check, the
 *                              start with an unrelated edit fails it, the solution passes
 */
import { spawn, spawnSync } from "node:child_process";
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { CourseError, compareChapters, formatFileChange, type Io, listChapters } from "./course.ts";
import { LANGS, LANGUAGE } from "./languages.ts";

export interface Exercise {
  id: string;
  /** The chapter it extends: `s02`. */
  chapter: string;
  title: string;
  /** Its folder, absolute. */
  dir: string;
  hints: Record<string, string>;
}

/** The chapter files a copy leaves out: installed packages and build output. */
const NOT_COPIED = new Set(["node_modules", ".turbo", "dist"]);
/** What `verify-all` appends to a fresh copy's main.ts: an edit that adds no feature. */
const UNRELATED_EDIT =
  "\n// An unrelated edit: a comment the check must not mistake for the feature.\n";

/** Every exercise, in id order (s02.1, s02.2, …, s10.1). */
export function listExercises(root: string): Exercise[] {
  const base = path.join(root, "exercises");
  if (!existsSync(base)) return [];
  return readdirSync(base)
    .flatMap((name) => {
      const match = /^(s\d\d)\.(\d+)-[a-z0-9-]+$/.exec(name);
      if (!match) return [];
      const dir = path.join(base, name);
      const meta = readMeta(dir);
      if (!meta) return []; // course check reports it
      return [
        {
          id: `${match[1]}.${match[2]}`,
          chapter: match[1]!,
          title: meta.title,
          dir,
          hints: meta.hints ?? {},
        },
      ];
    })
    .sort((a, b) => a.id.localeCompare(b.id, "en", { numeric: true }));
}

/** An exercise's exercise.json, or null when it is missing or not the expected shape. */
function readMeta(dir: string): { title: string; hints?: Record<string, string> } | null {
  try {
    const meta = JSON.parse(readFileSync(path.join(dir, "exercise.json"), "utf8"));
    return typeof meta?.title === "string" ? meta : null;
  } catch {
    return null;
  }
}

function findExercise(root: string, id: string): Exercise {
  const all = listExercises(root);
  const found = all.find((exercise) => exercise.id === id);
  if (!found) {
    const near = all.filter((exercise) => exercise.chapter === id.slice(0, 3)).map((e) => e.id);
    throw new CourseError(
      `no exercise "${id}"${near.length ? `; ${id.slice(0, 3)} has ${near.join(", ")}` : ""} (pnpm course exercise list shows them all)`,
    );
  }
  return found;
}

function chapterDir(root: string, id: string): string {
  const chapter = listChapters(root).find((c) => c.id === id);
  if (!chapter) throw new CourseError(`no chapter ${id}`);
  return chapter.dir;
}

/** Where a learner's copy lives unless --dir says otherwise. */
export function defaultCopy(root: string, exercise: Exercise): string {
  return path.join(root, "exercises", "work", exercise.id);
}

/**
 * The chapter copied to `dest`: its files but node_modules, which is linked to the chapter's
 * own (so the copy runs with the chapter's packages wherever it is), and a tsconfig that
 * still finds the course's base config.
 */
export function copyChapter(root: string, exercise: Exercise, dest: string): void {
  const from = chapterDir(root, exercise.chapter);
  cpSync(from, dest, {
    recursive: true,
    filter: (source) => !NOT_COPIED.has(path.basename(source)) || source === from,
  });
  symlinkSync(path.join(from, "node_modules"), path.join(dest, "node_modules"), "dir");
  const tsconfig = path.join(dest, "tsconfig.json");
  if (existsSync(tsconfig)) {
    const base = path.join(root, "tsconfig.base.json");
    const text = readFileSync(tsconfig, "utf8").replace(
      /"\.\.\/\.\.\/tsconfig\.base\.json"/,
      JSON.stringify(base),
    );
    writeFileSync(tsconfig, text);
  }
}

/** `git apply` of the reference solution inside `dir`; throws with git's words when it fails. */
export function applySolution(exercise: Exercise, dir: string, check = false): void {
  const patch = path.join(exercise.dir, "solution.diff");
  const run = spawnSync("git", ["apply", ...(check ? ["--check"] : []), patch], {
    cwd: dir,
    encoding: "utf8",
  });
  if (run.status !== 0) {
    throw new CourseError(
      `${path.relative(path.dirname(exercise.dir), patch)} does not apply to ${exercise.chapter}: ${(run.stderr || run.error?.message || "").trim()}`,
      1,
    );
  }
}

export function startExercise(root: string, id: string, dir: string | undefined, io: Io): number {
  const exercise = findExercise(root, id);
  const dest = path.resolve(dir ?? defaultCopy(root, exercise));
  if (existsSync(dest) && readdirSync(dest).length > 0) {
    throw new CourseError(
      `${dest} already exists and is not empty: your work stays as it is. Check it with \`pnpm course exercise check ${id}${dir ? ` --dir ${dir}` : ""}\`, or start in another folder with --dir`,
    );
  }
  copyChapter(root, exercise, dest);
  for (const lang of LANGS) {
    const statement = LANGUAGE[lang].readme;
    // A statement not yet translated is course check's to report, not a reason to stop here.
    if (!existsSync(path.join(exercise.dir, statement))) continue;
    cpSync(
      path.join(exercise.dir, statement),
      path.join(dest, statement.replace("README", "EXERCISE")),
    );
  }
  io.write(
    [
      `${exercise.id}: ${exercise.title}`,
      `The chapter ${exercise.chapter} is copied to ${dest}.`,
      `Read ${path.join(dest, "EXERCISE.md")}, change the code in ${path.join(dest, "src")},`,
      `and run it as the chapter runs: cd ${dest} && node --import tsx/esm src/main.ts`,
      `When you think it works: pnpm course exercise check ${exercise.id}${dir ? ` --dir ${dir}` : ""}`,
      "",
    ].join("\n"),
  );
  return 0;
}

interface CheckResult {
  /** Each check by name, in file order. */
  checks: Array<{ name: string; passed: boolean; failure?: string }>;
  /** Set when the checks could not run at all (the copy does not load). */
  error?: string;
}

/** A child process to its end: its status and output. */
function runProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs the exercise's checks against `dir` in a vitest process of their own. */
export async function runChecks(
  root: string,
  exercise: Exercise,
  dir: string,
): Promise<CheckResult> {
  const load = await runProcess(
    process.execPath,
    [
      "--import",
      "tsx/esm",
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(path.join(dir, "src", "main.ts"))})`,
    ],
    { cwd: dir, env: { ...process.env, NO_COLOR: "1" } },
  );
  if (load.status !== 0) {
    const why = load.stderr
      .split("\n")
      .filter((line) => line.trim())
      .slice(0, 6)
      .join("\n");
    return {
      checks: [],
      error: `the copy does not load (node --import tsx/esm src/main.ts):\n${why}`,
    };
  }
  const report = path.join(mkdtempSync(path.join(os.tmpdir(), "exercise-report-")), "report.json");
  const vitest = path.join(root, "tests", "node_modules", ".bin", "vitest");
  const run = await runProcess(
    vitest,
    [
      "run",
      "--config",
      path.join(root, "tests", "vitest.exercises.config.ts"),
      "--reporter=json",
      `--outputFile=${report}`,
    ],
    {
      cwd: path.join(root, "tests"),
      env: {
        ...process.env,
        EXERCISE_DIR: dir,
        EXERCISE_CHECK: path.join(exercise.dir, "check.ts"),
        EXERCISE_CHAPTER: exercise.chapter,
        NO_COLOR: "1",
      },
    },
  );
  if (!existsSync(report)) {
    return { checks: [], error: `the checks did not run:\n${(run.stderr || run.stdout).trim()}` };
  }
  const json = JSON.parse(readFileSync(report, "utf8")) as {
    testResults: Array<{
      message?: string;
      assertionResults: Array<{ title: string; status: string; failureMessages: string[] }>;
    }>;
  };
  rmSync(path.dirname(report), { recursive: true, force: true });
  const file = json.testResults[0];
  if (file && file.assertionResults.length === 0 && file.message) {
    return { checks: [], error: `the checks did not run: ${file.message.split("\n")[0]}` };
  }
  return {
    checks: (file?.assertionResults ?? []).map((result) => ({
      name: result.title,
      passed: result.status === "passed",
      ...(result.status === "passed" ? {} : { failure: failureText(result.failureMessages[0]) }),
    })),
  };
}

/** A failure as a learner reads it: the assertion and its diff, without the stack. */
function failureText(message: string | undefined): string {
  const lines = (message ?? "failed").replace(/\x1b\[[0-9;]*m/g, "").split("\n");
  const stack = lines.findIndex((line) => /^\s+at /.test(line));
  return lines
    .slice(0, stack === -1 ? undefined : stack)
    .filter((line) => line.trim() !== "")
    .slice(0, 12)
    .join("\n    ");
}

export async function checkExercise(
  root: string,
  id: string,
  options: { dir?: string; solution?: boolean },
  io: Io,
): Promise<number> {
  const exercise = findExercise(root, id);
  let dir: string;
  let temp: string | null = null;
  if (options.solution) {
    temp = mkdtempSync(path.join(os.tmpdir(), `exercise-${id}-`));
    dir = path.join(temp, "copy");
    copyChapter(root, exercise, dir);
    applySolution(exercise, dir);
  } else {
    dir = path.resolve(options.dir ?? defaultCopy(root, exercise));
    if (!existsSync(path.join(dir, "src", "main.ts"))) {
      throw new CourseError(
        `no copy of ${exercise.chapter} at ${dir}: start one with \`pnpm course exercise start ${id}${options.dir ? ` --dir ${options.dir}` : ""}\``,
      );
    }
  }
  try {
    const result = await runChecks(root, exercise, dir);
    io.write(
      `${exercise.id}: ${exercise.title}${options.solution ? " (the reference solution)" : ""}\n`,
    );
    if (result.error) {
      io.write(`✗ ${result.error}\n`);
      return 1;
    }
    for (const check of result.checks) {
      io.write(`${check.passed ? "✓" : "✗"} ${check.name}\n`);
      if (check.failure) io.write(`    ${check.failure}\n`);
    }
    const failed = result.checks.filter((check) => !check.passed);
    if (failed.length === 0 && result.checks.length > 0) {
      io.write(
        `All ${result.checks.length} checks pass. Compare with the reference: pnpm course exercise diff ${id}\n`,
      );
      return 0;
    }
    const hint = exercise.hints[failed[0]?.name ?? ""];
    io.write(
      `${failed.length} of ${result.checks.length} checks fail.${hint ? `\nHint: ${hint}` : ""}\n`,
    );
    return 1;
  } finally {
    if (temp) rmSync(temp, { recursive: true, force: true });
  }
}

/** Your change to the chapter (src and anything else you touched), then the solution's. */
export function diffExercise(
  root: string,
  id: string,
  dirOption: string | undefined,
  io: Io,
): number {
  const exercise = findExercise(root, id);
  const dir = path.resolve(dirOption ?? defaultCopy(root, exercise));
  if (!existsSync(path.join(dir, "src"))) {
    throw new CourseError(
      `no copy of ${exercise.chapter} at ${dir}: start one with \`pnpm course exercise start ${id}\``,
    );
  }
  const chapter = listChapters(root).find((c) => c.id === exercise.chapter)!;
  // The statement beside the code is the course's, not a change of yours.
  const mine = compareChapters(chapter, { ...chapter, dir }).filter(
    (change) => !/^EXERCISE(\.\w\w)?\.md$/.test(change.path),
  );
  io.write(`Your change to ${exercise.chapter} (${dir}):\n`);
  const text = mine.map((change) => formatFileChange(change, chapter.folder, "yours", io.color));
  io.write(text.length ? text.join("") : "(no change yet)\n");
  io.write(
    `\nThe reference solution (${path.relative(root, path.join(exercise.dir, "solution.diff"))}):\n`,
  );
  io.write(readFileSync(path.join(exercise.dir, "solution.diff"), "utf8"));
  return 0;
}

/**
 * The proof that every check is honest: the untouched start fails it, the start with an
 * unrelated edit fails it, the reference solution passes it. One line per exercise; the
 * runs go side by side, one per processor.
 */
export async function verifyAll(root: string, io: Io): Promise<number> {
  const exercises = listExercises(root);
  const temp = mkdtempSync(path.join(os.tmpdir(), "exercise-verify-"));
  const passes = (result: CheckResult) =>
    !result.error && result.checks.length > 0 && result.checks.every((check) => check.passed);
  // Each exercise's three copies, made before any check runs.
  const jobs = exercises.flatMap((exercise) => {
    const copy = (name: string) => {
      const dir = path.join(temp, exercise.id, name);
      copyChapter(root, exercise, dir);
      return dir;
    };
    const start = copy("start");
    const edited = copy("edited");
    appendFileSync(path.join(edited, "src", "main.ts"), UNRELATED_EDIT);
    const solved = copy("solution");
    applySolution(exercise, solved);
    return [start, edited, solved].map((dir) => ({ exercise, dir }));
  });
  const results = new Map<string, CheckResult>();
  const started = performance.now();
  try {
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const job = jobs[next++]!;
        results.set(job.dir, await runChecks(root, job.exercise, job.dir));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, os.cpus().length) }, worker));
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  const problems: string[] = [];
  for (const exercise of exercises) {
    const [start, unrelated, solution] = ["start", "edited", "solution"].map(
      (name) => results.get(path.join(temp, exercise.id, name))!,
    ) as [CheckResult, CheckResult, CheckResult];
    const failed = solution.checks.filter((c) => !c.passed);
    const verdicts = [
      passes(start) ? "the untouched start passes its check" : null,
      passes(unrelated) ? "the start with an unrelated edit passes its check" : null,
      passes(solution)
        ? null
        : `the reference solution fails: ${solution.error ?? failed.map((c) => `${c.name}: ${c.failure}`).join("; ")}`,
    ].filter((verdict): verdict is string => verdict !== null);
    io.write(
      `${verdicts.length ? "✗" : "✓"} ${exercise.id} ${exercise.title} (${solution.checks.length} checks)\n`,
    );
    for (const verdict of verdicts) {
      io.write(`    ${verdict}\n`);
      problems.push(`${exercise.id}: ${verdict}`);
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  io.write(
    problems.length
      ? `verify-all: ${problems.length} problem(s) (${seconds} s)\n`
      : `verify-all: every check is honest (${exercises.length} exercises, ${seconds} s)\n`,
  );
  return problems.length ? 1 : 0;
}

/** `course check`'s part: every exercise names a chapter and its solution still applies. */
export function checkExercises(root: string): string[] {
  const problems: string[] = [];
  const base = path.join(root, "exercises");
  for (const name of existsSync(base) ? readdirSync(base) : []) {
    if (name === "work" || !statSync(path.join(base, name)).isDirectory()) continue;
    if (!/^s\d\d\.\d+-[a-z0-9-]+$/.test(name)) {
      problems.push(`exercise: exercises/${name} is not named <id>-<slug> (s02.1-grep)`);
    } else if (!readMeta(path.join(base, name))) {
      problems.push(`exercise: exercises/${name}/exercise.json is missing or has no "title"`);
    }
  }
  for (const exercise of listExercises(root)) {
    const rel = path.relative(root, exercise.dir);
    for (const file of [...LANGS.map((l) => LANGUAGE[l].readme), "check.ts", "solution.diff"]) {
      if (!existsSync(path.join(exercise.dir, file)))
        problems.push(`exercise: ${rel}/${file} is missing`);
    }
    let dir: string;
    try {
      dir = chapterDir(root, exercise.chapter);
    } catch {
      problems.push(`exercise: ${rel} names chapter ${exercise.chapter}, which does not exist`);
      continue;
    }
    if (!existsSync(path.join(exercise.dir, "solution.diff")) || !statSync(dir).isDirectory())
      continue;
    try {
      applySolution(exercise, dir, true);
    } catch (error) {
      problems.push(
        `exercise: ${(error as Error).message} — update the solution to the chapter's code`,
      );
    }
  }
  return problems;
}

/** One line per exercise: id, chapter, title. */
export function formatList(root: string): string {
  const chapters = listChapters(root);
  const lines = listExercises(root).map((exercise) => {
    const chapter = chapters.find((c) => c.id === exercise.chapter);
    return `${exercise.id.padEnd(6)} ${(chapter?.folder ?? exercise.chapter).padEnd(16)} ${exercise.title}`;
  });
  return lines.length ? `${lines.join("\n")}\n` : "No exercises yet.\n";
}
