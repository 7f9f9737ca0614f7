/**
 * s09.2: memory records that expire. Run it with `pnpm course exercise check s09.2`.
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

const MEMORY = path.join(".harness", "memory");

const record = (name: string, description: string, expires: string | null) =>
  [
    "---",
    `name: ${name}`,
    `description: ${description}`,
    "type: project",
    ...(expires === null ? [] : [`expires: ${expires}`]),
    "---",
    "",
    `${description}.`,
    "",
  ].join("\n");

/** Four records: one expired long ago, one for centuries yet, one without a date, one with a bad one. */
const FILES = {
  [path.join(MEMORY, "on-call-rota.md")]: record(
    "On-call rota",
    "Dana is on call this quarter",
    "2999-12-31",
  ),
  [path.join(MEMORY, "release-freeze.md")]: record(
    "Release freeze",
    "The release freeze lasts until the audit ends",
    "2000-01-01",
  ),
  [path.join(MEMORY, "short-answers.md")]: record(
    "Short answers",
    "The user wants short answers",
    null,
  ),
  [path.join(MEMORY, "standup.md")]: record("Standup", "The standup is at nine", "next week"),
};

/** One typed line; the selection call answers `select`, the main agent "ok". */
async function session(line: string, select: string): Promise<RunOutcome> {
  return runExercise({
    files: FILES,
    prompts: [line],
    steps: [
      { when: (r) => toolNames(r).length === 0, reply: reply(text(select)) },
      { reply: reply(text("ok")) },
    ],
  });
}

const catalogOf = (request: RunOutcome["requests"][number]) =>
  String(request.messages[0]?.content).split("\n\nMemory catalog:\n")[1];

it("leaves an expired record out of the selection call's catalog", async () => {
  const run = await session("What should I know before I release?", "[0, 1, 2]");
  const select = run.requests.find((r) => toolNames(r).length === 0)!;
  expect(catalogOf(select)).toBe(
    [
      "0: On-call rota - Dana is on call this quarter",
      "1: Short answers - The user wants short answers",
      "2: Standup - The standup is at nine",
    ].join("\n"),
  );
  expect(run.output).toContain("[memory] recalled: on-call-rota.md, short-answers.md, standup.md");
});

it("leaves it out of MEMORY.md and of the prompt's Memory catalog, and keeps its file", async () => {
  const run = await session("What should I know before I release?", "[0]");
  const index = [
    "- [On-call rota](on-call-rota.md) - Dana is on call this quarter",
    "- [Short answers](short-answers.md) - The user wants short answers",
    "- [Standup](standup.md) - The standup is at nine",
  ].join("\n");
  expect(readFileSync(path.join(run.workdir, MEMORY, "MEMORY.md"), "utf8")).toBe(`${index}\n`);
  const main = run.requests.find((r) => toolNames(r).length > 0)!;
  const system = typeof main.system === "string" ? main.system : JSON.stringify(main.system);
  expect(system).toContain(`Memory catalog:\n${index}\n`);
  expect(system).not.toContain("release-freeze.md");
  expect(existsSync(path.join(run.workdir, MEMORY, "release-freeze.md"))).toBe(true);
});

it("never recalls an expired record by keywords either", async () => {
  // No JSON array in the selection reply: recall falls back to matching words.
  const run = await session("Release freeze over? Ask Dana.", "no idea");
  expect(run.output).toContain(
    "[memory] recalled: on-call-rota.md (keyword match: the selection call gave no usable answer)",
  );
  expect(run.output).not.toContain("release-freeze.md");
});

it("lists an expired record in /memory with the day it expired", async () => {
  const run = await runExercise({ files: FILES, prompts: ["/memory"] });
  const lines = run.output.split("\n").filter((line) => line.startsWith("- "));
  expect(lines).toEqual([
    "- On-call rota [project] Dana is on call this quarter (on-call-rota.md)",
    "- Release freeze [project] The release freeze lasts until the audit ends (release-freeze.md, expired 2000-01-01)",
    "- Short answers [project] The user wants short answers (short-answers.md)",
    "- Standup [project] The standup is at nine (standup.md)",
  ]);
});
