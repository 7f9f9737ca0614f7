/**
 * `pnpm mutate --generated [module...]`: StrykerJS generates the breakages of three pure
 * modules the permission gate and the scheduler rely on (shell-parse.ts, paths.ts,
 * cron-parse.ts), runs each module's narrowest suites against every one, and this script
 * reports the score per module with the equivalent mutants (stryker/equivalents.json, each
 * with its reason) left out, and exits 1 below a module's goal.
 *
 * Runs are incremental: stryker/<module>.incremental.json (committed) holds the last results,
 * so a run after a small change tests only the mutants and tests it touched. One blind spot:
 * a mutant of code that runs once at load (a table such as WRAPPERS, a "static" mutant) has
 * no tests of its own, so a new test that kills it goes unnoticed until `--force` reruns all.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The modules, their goals (score with equivalents left out) and the copy mutated. */
export const MODULES: Record<string, { goal: number; file: string }> = {
  "shell-parse": { goal: 90, file: "chapters/s03-permissions/src/shell-parse.ts" },
  paths: { goal: 95, file: "chapters/s02-tools/src/paths.ts" },
  "cron-parse": { goal: 95, file: "chapters/s12-cron/src/cron-parse.ts" },
};

/** A mutant that cannot change behaviour: where it is (its line's text), what, and why. */
export interface Equivalent {
  module: string;
  /** The mutated line's text, trimmed (stable across edits elsewhere in the file). */
  line: string;
  mutator: string;
  replacement: string;
  reason: string;
}

interface Mutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number } };
}

export interface Score {
  module: string;
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  equivalent: number;
  /** Caught (killed + timeout) over all but the equivalents and compile errors, in percent. */
  score: number;
  goal: number;
  /** The survivors that are not known equivalents: `line: mutator → replacement`. */
  open: string[];
}

export function readEquivalents(root = ROOT): Equivalent[] {
  const file = path.join(root, "stryker", "equivalents.json");
  const data = JSON.parse(fs.readFileSync(file, "utf8")) as { equivalents: Equivalent[] };
  return data.equivalents;
}

/** The score of one module from its Stryker JSON report. */
export function scoreOf(
  module: string,
  report: { files: Record<string, { source: string; mutants: Mutant[] }> },
  equivalents: Equivalent[],
  goal: number,
): Score {
  const entry = Object.values(report.files)[0];
  if (!entry) throw new Error(`the report for ${module} holds no file`);
  const lines = entry.source.split("\n");
  const known = equivalents.filter((e) => e.module === module);
  const score: Score = {
    module,
    killed: 0,
    timeout: 0,
    survived: 0,
    noCoverage: 0,
    equivalent: 0,
    score: 0,
    goal,
    open: [],
  };
  for (const mutant of entry.mutants) {
    const line = (lines[mutant.location.start.line - 1] ?? "").trim();
    const equivalent = known.some(
      (e) =>
        e.line === line &&
        e.mutator === mutant.mutatorName &&
        e.replacement === (mutant.replacement ?? ""),
    );
    if (mutant.status === "Killed") score.killed++;
    else if (mutant.status === "Timeout") score.timeout++;
    else if (mutant.status === "Survived" || mutant.status === "NoCoverage") {
      if (equivalent) score.equivalent++;
      else {
        if (mutant.status === "Survived") score.survived++;
        else score.noCoverage++;
        score.open.push(
          `${mutant.location.start.line}: ${mutant.mutatorName} → ${mutant.replacement ?? ""}  (${line})`,
        );
      }
    }
  }
  const counted = score.killed + score.timeout + score.survived + score.noCoverage;
  score.score = counted === 0 ? 100 : (100 * (score.killed + score.timeout)) / counted;
  return score;
}

function runStryker(module: string, force: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, "node_modules/@stryker-mutator/core/bin/stryker.js"),
        "run",
        `stryker/${module}.config.mjs`,
        ...(force ? ["--force"] : []),
      ],
      {
        cwd: ROOT,
        // cron.test.ts moves the clock across a daylight-saving change in New York; in
        // Stryker's worker threads TZ can only be set for the whole process.
        env: { ...process.env, TZ: "America/New_York" },
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    child.on("error", reject);
    child.on("close", (code) => resolve(code ?? 1));
  });
}

export function formatScores(scores: Score[]): string {
  const rows = scores.map(
    (s) =>
      `| ${s.module} | ${s.killed + s.timeout} | ${s.survived + s.noCoverage} | ${s.equivalent} | ${s.score.toFixed(1)} % | ${s.goal} % | ${s.score >= s.goal ? "met" : "BELOW"} |`,
  );
  return [
    "| module | caught | survived | equivalent | score | goal | |",
    "|---|--:|--:|--:|--:|--:|---|",
    ...rows,
  ].join("\n");
}

/**
 * Runs Stryker for `modules` (all when empty), prints the scores; 1 when one is below its
 * goal. `force` tests every mutant again instead of reusing the last results.
 */
export async function runGenerated(modules: string[], force = false): Promise<number> {
  const wanted = modules.length > 0 ? modules : Object.keys(MODULES);
  for (const module of wanted) {
    if (!MODULES[module]) {
      process.stderr.write(
        `mutate --generated: unknown module "${module}" (modules: ${Object.keys(MODULES).join(", ")})\n`,
      );
      return 2;
    }
  }
  const equivalents = readEquivalents();
  const scores: Score[] = [];
  for (const module of wanted) {
    const started = performance.now();
    const code = await runStryker(module, force);
    if (code !== 0) {
      process.stderr.write(`mutate --generated: Stryker failed for ${module} (exit ${code})\n`);
      return 2;
    }
    const report = JSON.parse(
      fs.readFileSync(path.join(ROOT, "reports", "stryker", `${module}.json`), "utf8"),
    );
    const score = scoreOf(module, report, equivalents, MODULES[module]!.goal);
    scores.push(score);
    process.stdout.write(
      `\n${module}: ${((performance.now() - started) / 1000).toFixed(0)} s; survivors that are not known equivalents:\n` +
        (score.open.map((line) => `  ${line}\n`).join("") || "  (none)\n"),
    );
  }
  process.stdout.write(`\n${formatScores(scores)}\n`);
  return scores.every((s) => s.score >= s.goal) ? 0 : 1;
}
