/**
 * Project instructions (s09): `CLAUDE.md` and `AGENTS.md` at the workspace root, read once
 * at start and put into the system prompt as they are (memory the user writes by hand).
 * Each is capped; an unreadable one is reported and left out. Never written.
 */
import { readFileSync, statSync } from "node:fs";
import path from "node:path";

export const PROJECT_FILES = ["CLAUDE.md", "AGENTS.md"];
/** Characters of each project instruction file that reach the prompt. */
export const PROJECT_FILE_LIMIT = 20_000;

export interface ProjectInstructions {
  files: Array<{ name: string; text: string }>;
  problems: string[];
}

/** Reads CLAUDE.md then AGENTS.md from the workspace root. */
export function readProjectInstructions(workdir: string): ProjectInstructions {
  const result: ProjectInstructions = { files: [], problems: [] };
  for (const name of PROJECT_FILES) {
    const file = path.join(workdir, name);
    let text: string;
    try {
      if (!statSync(file).isFile()) continue;
      text = readFileSync(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
        result.problems.push(
          `${file} cannot be read (${(error as Error).message}); left out of the prompt`,
        );
      }
      continue;
    }
    if (text.length > PROJECT_FILE_LIMIT) {
      text = `${text.slice(0, PROJECT_FILE_LIMIT)}\n(truncated; read the file for the rest)`;
    }
    result.files.push({ name, text: text.trim() });
  }
  return result;
}

export function projectSection(project: ProjectInstructions) {
  if (project.files.length === 0) return null;
  const parts = project.files.map(
    (file) => `Project instructions from ${file.name}:\n${file.text}`,
  );
  return {
    id: "project",
    text: [
      "Project instructions: the files below come from the project; follow them unless the current user request says otherwise.",
      ...parts,
    ].join("\n\n"),
  };
}
