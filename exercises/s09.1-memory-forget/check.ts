/**
 * s09.1: `/memory forget <name>`. Run it with `pnpm course exercise check s09.1`.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  expect,
  it,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
} from "../../tests/helpers/exercise.ts";

const record = (name: string, description: string, type: string, body: string) =>
  `---\nname: ${name}\ndescription: ${description}\ntype: ${type}\n---\n\n${body}\n`;

const MEMORY = path.join(".harness", "memory");

/** Two records, one instruction file beside them, and a notes file outside the store. */
const FILES = {
  [path.join(MEMORY, "short-answers.md")]: record(
    "Short answers",
    "The user wants short answers without a preamble",
    "user",
    "Answer in one or two sentences.",
  ),
  [path.join(MEMORY, "staging-database.md")]: record(
    "Staging database",
    "The staging database is read-only",
    "project",
    "Never write to the staging database; use a local copy.",
  ),
  "CLAUDE.md": "Use British spelling.\n",
  ".harness/notes.md": "Not a memory record.\n",
};

const INDEX_LINES = {
  short: "- [Short answers](short-answers.md) - The user wants short answers without a preamble",
  staging: "- [Staging database](staging-database.md) - The staging database is read-only",
};

/** The typed lines; any model call is answered "ok" (selection calls pick record 0 and 1). */
function session(lines: string[]): Promise<RunOutcome> {
  return runExercise({
    files: FILES,
    prompts: lines,
    steps: [
      { when: (r) => toolNames(r).length === 0, reply: reply(text("[0, 1]")), repeat: true },
      { reply: reply(text("ok")), repeat: true },
    ],
  });
}

const exists = (run: RunOutcome, file: string) => existsSync(path.join(run.workdir, file));
const index = (run: RunOutcome) =>
  readFileSync(path.join(run.workdir, MEMORY, "MEMORY.md"), "utf8");

it("forgets a record by its file name: the file is gone, and MEMORY.md no longer lists it", async () => {
  const run = await session(["/memory forget short-answers.md"]);
  expect(run.output).toContain("Forgot Short answers (short-answers.md)");
  expect(exists(run, path.join(MEMORY, "short-answers.md"))).toBe(false);
  expect(exists(run, path.join(MEMORY, "staging-database.md"))).toBe(true);
  expect(index(run)).toBe(`${INDEX_LINES.staging}\n`);
});

it("finds a record by its name in any case, or by its file name without .md", async () => {
  const run = await session(["/memory forget staging DATABASE", "/memory forget short-answers"]);
  expect(run.output).toContain("Forgot Staging database (staging-database.md)");
  expect(run.output).toContain("Forgot Short answers (short-answers.md)");
  expect(exists(run, path.join(MEMORY, "staging-database.md"))).toBe(false);
  expect(exists(run, path.join(MEMORY, "short-answers.md"))).toBe(false);
  expect(index(run)).toBe("");
});

it("removes nothing that is not a record: an unknown name, MEMORY.md, a path out of the store", async () => {
  const run = await session([
    "/memory forget tabs",
    "/memory forget MEMORY.md",
    "/memory forget ../notes.md",
    "/memory forget ../../CLAUDE.md",
  ]);
  for (const name of ["tabs", "MEMORY.md", "../notes.md", "../../CLAUDE.md"]) {
    expect(run.output).toContain(`No memory record named '${name}'. /memory lists them.`);
  }
  for (const file of ["CLAUDE.md", ".harness/notes.md", path.join(MEMORY, "short-answers.md")]) {
    expect(exists(run, file)).toBe(true);
  }
  expect(index(run)).toBe(`${INDEX_LINES.short}\n${INDEX_LINES.staging}\n`);
});

it("leaves a forgotten record out of the next turn's prompt", async () => {
  const run = await session(["/memory forget Short answers", "How should you answer?"]);
  const main = run.requests.find((r) => toolNames(r).length > 0)!;
  const system = JSON.stringify(main.system);
  expect(system).toContain("staging-database.md");
  expect(system).not.toContain("short-answers.md");
  expect(run.output).toContain("[memory] recalled: staging-database.md");
});

it("answers with its usage when the name is missing or the word is not forget, and /memory still lists", async () => {
  const run = await session(["/memory forget", "/memory drop tabs", "/memory"]);
  const usage = run.output.split("\n").filter((line) => line.includes("Usage: /memory"));
  expect(usage).toEqual([
    "Usage: /memory, or /memory forget <name>",
    "Usage: /memory, or /memory forget <name>",
  ]);
  expect(run.output).toContain(
    "- Short answers [user] The user wants short answers without a preamble (short-answers.md)",
  );
  expect(exists(run, path.join(MEMORY, "short-answers.md"))).toBe(true);
});
