/**
 * What an exercise's check (exercises/<id>/check.ts) works with: vitest, the scripted
 * model's answers and the suites' helpers, all from here so a check imports one module;
 * and `runExercise`, which runs the learner's copy of the chapter (EXERCISE_DIR, set by
 * `pnpm course exercise check`) through its own `main` against the fake API, as the suites
 * run a chapter.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Main } from "shared";
import type { Chapter } from "../chapters.ts";
import { type RunOptions, type RunOutcome, runChapter } from "./run.ts";

export { apiError, reply, text, toolUse } from "shared/testing";
export { afterAll, beforeAll, describe, expect, it } from "vitest";
export {
  afterTools,
  lastMentions,
  lastToolResults,
  type RunOutcome,
  tempWorkspace,
  toolNames,
  writeFiles,
} from "./run.ts";

/** The folder the check runs against: the learner's copy, or the reference solution's. */
export function exerciseDir(): string {
  const dir = process.env.EXERCISE_DIR;
  if (!dir)
    throw new Error("EXERCISE_DIR is not set: run a check with `pnpm course exercise check <id>`");
  return dir;
}

/** Runs the copy's `main` once, as runChapter runs a chapter: prompts piped, a scripted model. */
export async function runExercise(options: RunOptions): Promise<RunOutcome> {
  const dir = exerciseDir();
  const entry = pathToFileURL(path.join(dir, "src", "main.ts")).href;
  const { main } = (await import(entry)) as { main: Main };
  const chapter: Chapter = {
    id: process.env.EXERCISE_CHAPTER ?? "exercise",
    dir: path.basename(dir),
    title: "exercise",
  };
  return runChapter(chapter, { ...options, main });
}
