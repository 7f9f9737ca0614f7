/**
 * `pnpm mutate` — does the suite notice when a behaviour breaks?
 *
 *   pnpm mutate                    every breakage in scripts/mutations.ts
 *   pnpm mutate <id|chapter>...    a subset: breakage ids, or chapters (s09, shared)
 *   pnpm mutate --list             the breakages, and whether each still applies
 *   pnpm mutate --generated [mod]  StrykerJS's generated breakages of three parsers
 *                                  (scripts/mutate-generated.ts; --force: no reuse)
 *
 * The working tree is never touched. The repository is copied once to a temporary folder
 * (without .git, node_modules and run output; each package's node_modules is rebuilt there
 * from the original's links, the package store is shared), the unmodified copy must pass
 * the tests the breakages will run, and then each breakage in turn is applied to the copy,
 * its test files run there (`vitest --bail 1`; for a chapter file only tests whose name
 * holds the chapter id), and the file is restored. A breakage is caught when a test fails,
 * missed when all pass, and stale when its search text is no longer in the file exactly
 * once. Exit status: 0 when every breakage was caught, 1 when one was missed or stale, 2 for
 * a usage error or a copy that is not green.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { isEntry } from "shared";
import { runGenerated } from "./mutate-generated.ts";
import { MUTATIONS, type Mutation } from "./mutations.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Never copied: history, installed packages (linked instead) and what runs leave behind. */
const SKIP = new Set(["node_modules", ".git", ".turbo", ".harness"]);
/** A learner's exercise copies (`pnpm course exercise start`): not the course's code. */
const SKIP_PATHS = [path.join("exercises", "work")];
/** Kept out of the copied node_modules folders: caches and pnpm's own run state. */
const SKIP_IN_MODULES = new Set([".vite", ".vite-temp", ".pnpm-task-run-state-v1"]);
/** pnpm's record of the workspace, which names its folders by absolute path. */
const WORKSPACE_STATE = ".pnpm-workspace-state-v1.json";
/** One vitest run that takes longer than this is stopped (and counts as caught). */
const RUN_LIMIT_MS = 10 * 60_000;

type Outcome = "caught" | "missed" | "stale" | "no tests";

interface Row {
  mutation: Mutation;
  outcome: Outcome;
  /** The first failing test, or why the breakage is stale. */
  detail: string;
  ms: number;
}

class MutateError extends Error {}

// ---------------------------------------------------------------------------------------
// The list

/** `s09` for a chapter file, else the top folder (`shared`). */
export function chapterOf(file: string): string {
  return /^chapters\/(s\d\d)-/.exec(file)?.[1] ?? file.split("/")[0]!;
}

/** Why a breakage cannot be applied to the tree at `root`, or null when it can. */
export function staleReason(mutation: Mutation, root: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(root, mutation.file), "utf8");
  } catch {
    return `${mutation.file} does not exist`;
  }
  if (mutation.search === mutation.replace) return "search and replace are the same";
  const count = text.split(mutation.search).length - 1;
  if (count !== 1) return `search text found ${count} times in ${mutation.file} (needs exactly 1)`;
  for (const test of mutation.tests ?? []) {
    if (!fs.existsSync(path.join(root, "tests", test))) return `no test file tests/${test}`;
  }
  return null;
}

/** The breakages named by `selectors` (ids or chapters); all of them for none. */
export function select(list: Mutation[], selectors: string[]): Mutation[] {
  const seen = new Set<string>();
  for (const mutation of list) {
    if (seen.has(mutation.id)) throw new MutateError(`two breakages are called ${mutation.id}`);
    seen.add(mutation.id);
  }
  if (selectors.length === 0) return list;
  const chapters = new Set(list.map((mutation) => chapterOf(mutation.file)));
  for (const selector of selectors) {
    if (!seen.has(selector) && !chapters.has(selector)) {
      throw new MutateError(
        `no breakage or chapter '${selector}' (chapters: ${[...chapters].sort().join(", ")}; ` +
          "pnpm mutate --list shows the ids)",
      );
    }
  }
  const wanted = new Set(selectors);
  return list.filter((m) => wanted.has(m.id) || wanted.has(chapterOf(m.file)));
}

// ---------------------------------------------------------------------------------------
// The copy

/** Copies the repository to a new temporary folder and links its packages; returns it. */
export function copyRepository(root: string): string {
  const copy = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-mutate-")));
  fs.cpSync(root, copy, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (source) =>
      source === root ||
      (!SKIP.has(path.basename(source)) && !SKIP_PATHS.includes(path.relative(root, source))),
  });
  for (const dir of packageDirs(root)) {
    const from = path.join(root, dir, "node_modules");
    const to = path.join(copy, dir, "node_modules");
    fs.mkdirSync(to, { recursive: true });
    for (const entry of fs.readdirSync(from)) {
      if (SKIP_IN_MODULES.has(entry)) continue;
      const source = path.join(from, entry);
      const target = path.join(to, entry);
      if (entry === ".pnpm") {
        // The package store: shared with the original (nothing in it is ours).
        fs.symlinkSync(source, target);
      } else if (entry === WORKSPACE_STATE) {
        // Keeps pnpm (which cli.test.ts runs) from taking the copy for a new workspace.
        const escaped = (p: string) => JSON.stringify(p).slice(1, -1);
        const text = fs.readFileSync(source, "utf8");
        fs.writeFileSync(target, text.split(escaped(root)).join(escaped(copy)));
      } else {
        // Workspace links are relative (../../shared), so they now lead into the copy.
        fs.cpSync(source, target, { recursive: true, verbatimSymlinks: true });
      }
    }
  }
  checkLinks(root, copy);
  return copy;
}

/** Repository-relative folders (the root is "") that have a node_modules folder. */
function packageDirs(root: string, dir = ""): string[] {
  const found = fs.existsSync(path.join(root, dir, "node_modules")) ? [dir] : [];
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory() && !SKIP.has(entry.name) && !SKIP_PATHS.includes(rel)) {
      found.push(...packageDirs(root, rel));
    }
  }
  return found;
}

/**
 * Every package link that leads to a workspace package in the original must lead to the
 * same package in the copy: otherwise the tests would import the unbroken original.
 */
function checkLinks(root: string, copy: string): void {
  const isModules = (p: string) => p.split(path.sep).includes("node_modules");
  for (const dir of packageDirs(root)) {
    const modules = path.join(root, dir, "node_modules");
    const names = fs
      .readdirSync(modules)
      .flatMap((name) =>
        name.startsWith("@") && fs.statSync(path.join(modules, name)).isDirectory()
          ? fs.readdirSync(path.join(modules, name)).map((inner) => path.join(name, inner))
          : [name],
      );
    for (const name of names) {
      const link = path.join(modules, name);
      if (!fs.lstatSync(link).isSymbolicLink()) continue;
      let real: string;
      try {
        real = fs.realpathSync(link);
      } catch {
        continue; // a dangling link in the original: nothing to compare
      }
      const inside = path.relative(root, real);
      if (inside.startsWith("..") || path.isAbsolute(inside) || isModules(inside)) continue;
      const copied = path.join(copy, dir, "node_modules", name);
      if (fs.realpathSync(copied) !== path.join(copy, inside)) {
        throw new MutateError(
          `${path.join(dir, "node_modules", name)} in the copy does not lead to the copy's ${inside}`,
        );
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Running vitest

interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  testResults: Array<{
    name: string;
    status: string;
    message?: string;
    assertionResults: Array<{ ancestorTitles: string[]; title: string; status: string }>;
  }>;
}

interface TestRun {
  failed: boolean;
  /** Tests that passed or failed (skipped ones not counted). */
  ran: number;
  /** The first failing test, "" when none failed. */
  firstFailure: string;
  ms: number;
}

let running: ReturnType<typeof spawn> | null = null;

/**
 * Runs vitest in `copy`'s tests folder on `files` (relative to tests/; none: the whole
 * suite), only tests whose full name matches `names` when given, stopping at the first
 * failure.
 */
export function runTests(copy: string, files: string[], names: string | null): Promise<TestRun> {
  const tests = path.join(copy, "tests");
  const report = path.join(copy, "mutate-report.json");
  fs.rmSync(report, { force: true });
  const args = [
    path.join(tests, "node_modules", "vitest", "vitest.mjs"),
    "run",
    ...files.map((file) => path.join(tests, file)),
    "--bail",
    "1",
    "--reporter",
    "json",
    "--outputFile",
    report,
    ...(names ? ["--testNamePattern", names] : []),
  ];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: tests,
      env: process.env,
      stdio: ["ignore", "ignore", "pipe"],
      detached: true, // its own process group: a stop ends every test process with it
    });
    running = child;
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, RUN_LIMIT_MS);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      running = null;
      const ms = performance.now() - started;
      if (timedOut) {
        resolve({
          failed: true,
          ran: 1,
          firstFailure: `(stopped after ${RUN_LIMIT_MS / 1000} s)`,
          ms,
        });
        return;
      }
      let parsed: VitestReport | null = null;
      try {
        parsed = JSON.parse(fs.readFileSync(report, "utf8")) as VitestReport;
      } catch {
        // No report: vitest itself failed; said below with its last words.
      }
      if (parsed === null) {
        const last = stderr.trim().split("\n").at(-1) ?? "";
        resolve({
          failed: code !== 0,
          ran: code !== 0 ? 1 : 0,
          firstFailure: `(no report) ${last}`,
          ms,
        });
        return;
      }
      resolve({
        failed: code !== 0,
        ran: parsed.numPassedTests + parsed.numFailedTests,
        firstFailure: code === 0 ? "" : firstFailure(parsed, tests),
        ms,
      });
    });
  });
}

function firstFailure(report: VitestReport, tests: string): string {
  for (const file of report.testResults) {
    const failed = file.assertionResults.find((test) => test.status === "failed");
    const name = path.relative(tests, file.name);
    if (failed) return [name, ...failed.ancestorTitles, failed.title].join(" > ");
    if (file.status === "failed") {
      return `${name}: ${(file.message ?? "failed").trim().split("\n")[0]}`;
    }
  }
  return "(a failure outside any test)";
}

function killGroup(child: ReturnType<typeof spawn>): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** The test-name filter for breakages of these chapters (null: every test). */
function namePattern(chapters: string[]): string | null {
  const ids = chapters.filter((chapter) => /^s\d\d$/.test(chapter));
  if (ids.length === 0 || ids.length !== chapters.length) return null;
  return `\\b(${[...new Set(ids)].sort().join("|")})\\b`;
}

// ---------------------------------------------------------------------------------------
// The run

/** The runs that check the unmodified copy: chapter breakages, then the others. */
function baselineRuns(list: Mutation[]): Array<{ files: string[]; names: string | null }> {
  const groups = [
    list.filter((m) => /^s\d\d$/.test(chapterOf(m.file))),
    list.filter((m) => !/^s\d\d$/.test(chapterOf(m.file))),
  ];
  return groups
    .filter((group) => group.length > 0)
    .map((group) => ({
      // One breakage without a list runs the whole suite, and so does its check.
      files: group.some((m) => !m.tests) ? [] : [...new Set(group.flatMap((m) => m.tests!))],
      names: namePattern(group.map((m) => chapterOf(m.file))),
    }));
}

async function mutate(copy: string, mutation: Mutation): Promise<Row> {
  const file = path.join(copy, mutation.file);
  const original = fs.readFileSync(file, "utf8");
  fs.writeFileSync(
    file,
    original.replace(mutation.search, () => mutation.replace),
  );
  try {
    const run = await runTests(copy, mutation.tests ?? [], namePattern([chapterOf(mutation.file)]));
    const outcome: Outcome = run.ran === 0 ? "no tests" : run.failed ? "caught" : "missed";
    return { mutation, outcome, detail: run.firstFailure, ms: run.ms };
  } finally {
    fs.writeFileSync(file, original);
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

function table(headers: string[], rows: string[][]): string {
  const lines = [headers, headers.map(() => "---"), ...rows].map(
    (row) => `| ${row.map(cell).join(" | ")} |`,
  );
  return `${lines.join("\n")}\n`;
}

function listing(list: Mutation[]): { text: string; stale: number } {
  let stale = 0;
  const rows = list.map((m) => {
    const reason = staleReason(m, ROOT);
    if (reason) stale++;
    return [
      m.id,
      m.file,
      m.description,
      (m.tests ?? ["(whole suite)"]).join(", "),
      reason ? `stale: ${reason}` : "ok",
    ];
  });
  const text = table(["id", "file", "description", "tests", "status"], rows);
  return { text: `${text}\n${list.length} breakages, ${stale} stale\n`, stale };
}

function score(rows: Row[]): string {
  const caught = (list: Row[]) => list.filter((row) => row.outcome === "caught").length;
  const lines = [`caught ${caught(rows)} of ${rows.length}`];
  const chapters = [...new Set(rows.map((row) => chapterOf(row.mutation.file)))].sort();
  if (chapters.length > 1) {
    for (const chapter of chapters) {
      const mine = rows.filter((row) => chapterOf(row.mutation.file) === chapter);
      lines.push(`  ${chapter}: caught ${caught(mine)} of ${mine.length}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

const USAGE = `Usage: pnpm mutate [<id|chapter>...] [--list] [--keep]
       pnpm mutate --generated [shell-parse|paths|cron-parse ...] [--force]

Applies each breakage of scripts/mutations.ts to a temporary copy of the repository and
runs its test files there; reports which ones no test catches.

  <id|chapter>   only these breakages: ids, or chapters (s09, shared)
  --list         list the breakages and whether each still applies (exit 1 if one is stale)
  --keep         keep the temporary copy and print where it is
  --generated    StrykerJS generates the breakages of the permission gate's and the
                 scheduler's parsers instead (scripts/mutate-generated.ts): the score per
                 module, equivalent mutants left out; exit 1 below a module's goal
  --force        with --generated: test every mutant again, reusing no earlier result
  --help         this text
`;

export async function main(argv: string[]): Promise<number> {
  let values: {
    list?: boolean;
    keep?: boolean;
    help?: boolean;
    generated?: boolean;
    force?: boolean;
  };
  let selected: Mutation[];
  try {
    const parsed = parseArgs({
      args: argv,
      options: {
        list: { type: "boolean" },
        keep: { type: "boolean" },
        generated: { type: "boolean" },
        force: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    });
    values = parsed.values;
    if (values.generated) return runGenerated(parsed.positionals, values.force);
    selected = select(MUTATIONS, parsed.positionals);
  } catch (error) {
    process.stderr.write(`mutate: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.list) {
    const { text, stale } = listing(selected);
    process.stdout.write(text);
    return stale > 0 ? 1 : 0;
  }

  const started = performance.now();
  const out = (text: string) => process.stdout.write(text);
  const stale: Row[] = [];
  const runnable: Mutation[] = [];
  for (const mutation of selected) {
    const reason = staleReason(mutation, ROOT);
    if (reason) stale.push({ mutation, outcome: "stale", detail: reason, ms: 0 });
    else runnable.push(mutation);
  }
  for (const row of stale) out(`STALE ${row.mutation.id}: ${row.detail}\n`);

  let copy: string | null = null;
  const cleanUp = () => {
    if (copy && !values.keep) fs.rmSync(copy, { recursive: true, force: true });
  };
  const onSignal = () => {
    if (running) killGroup(running);
    cleanUp();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const rows: Row[] = [];
  try {
    if (runnable.length > 0) {
      copy = copyRepository(ROOT);
      out(`Copied the repository to ${copy}\n`);
      for (const check of baselineRuns(runnable)) {
        const what = check.files.length > 0 ? check.files.join(" ") : "the whole suite";
        out(
          `Checking the unmodified copy: ${what}${check.names ? ` (tests named ${check.names})` : ""}\n`,
        );
        const run = await runTests(copy, check.files, check.names);
        if (run.failed || run.ran === 0) {
          const why = run.failed ? `a test fails: ${run.firstFailure}` : "no test ran";
          throw new MutateError(`the unmodified copy is not green (${why}); fix that first`);
        }
        out(`  ${run.ran} tests passed in ${seconds(run.ms)}\n`);
      }
      for (const [i, mutation] of runnable.entries()) {
        const row = await mutate(copy, mutation);
        rows.push(row);
        const n = String(i + 1).padStart(String(runnable.length).length);
        out(`[${n}/${runnable.length}] ${mutation.id}: ${row.outcome} (${seconds(row.ms)})\n`);
      }
    }
  } catch (error) {
    if (!(error instanceof MutateError)) throw error;
    process.stderr.write(`mutate: ${error.message}\n`);
    return 2;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    cleanUp();
    if (copy && values.keep) out(`The copy is kept at ${copy}\n`);
  }

  const all = [...rows, ...stale];
  out("\n");
  out(
    table(
      ["id", "file", "description", "result", "first failing test", "time"],
      all.map((row) => [
        row.mutation.id,
        row.mutation.file,
        row.mutation.description,
        row.outcome,
        row.detail,
        row.outcome === "stale" ? "" : seconds(row.ms),
      ]),
    ),
  );
  out("\n");
  out(score(all));
  const missed = all.filter((row) => row.outcome !== "caught");
  for (const row of missed)
    out(`${row.outcome.toUpperCase()}: ${row.mutation.id} (${row.mutation.description})\n`);
  out(`Total time: ${seconds(performance.now() - started)}\n`);
  return missed.length > 0 ? 1 : 0;
}

if (isEntry(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `mutate: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 2;
    },
  );
}
