/**
 * s07: Skill Loading — a catalog of skills in the system prompt, the full text on demand.
 *
 *   start: skills/<name>/SKILL.md, .claude/skills/<name>/SKILL.md ──> each name + description
 *   system prompt:  Skills available:
 *                   - code-review: Review a code change …      (one line per skill)
 *   model ──> load_skill("code-review") ──> the whole SKILL.md as the tool result
 *
 * Run it:  pnpm --filter s07 start    (no key configured: the offline demo runs)
 *          pnpm --filter s07 demo
 * New here: skills.ts (the scan, the catalog, load_skill, /skills) and commands.ts
 * (Claude Code's custom commands from .claude/commands/, and every skill as /name), two
 * lines in the list below; the REPL answers /help. A SKILL.md's YAML header is read by s06's frontmatter.ts, as an agent definition's
 * is. The skills are scanned once at start; the subagent gets neither the tool nor the
 * catalog.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { commandsMechanism } from "./commands.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { permissionsMechanism } from "./permissions.ts";
import { skillsMechanism } from "./skills.ts";
import { subagentMechanism } from "./subagent.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s07", title: "Skill Loading" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
    hooksMechanism(harness),
    todoMechanism(harness),
    subagentMechanism(harness),
    skillsMechanism(harness),
    commandsMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
