/**
 * The system prompt (s01 §0.2, DESIGN §7.4): sections joined by blank lines. The identity
 * line comes first, then one section per mechanism in chapter order; sections that change
 * during a session (`dynamic`) go last so the stable prefix stays cacheable. Each
 * mechanism file exports its own section; this file only lists them.
 */
import { shellSection } from "./bash.ts";
import { childContextSection, contextSection } from "./compact.ts";
import { hooksSection } from "./hooks.ts";
import { permissionsSection } from "./permissions.ts";
import { type Skill, skillsSection } from "./skills.ts";
import { delegationSection, subagentSection } from "./subagent.ts";
import { planningSection } from "./todo.ts";
import { filesSection } from "./tools.ts";

export interface PromptSection {
  id: string;
  text: string;
  /** Rebuilt during the session (memory, time, goal): placed after every stable section. */
  dynamic?: boolean;
}

export function identitySection(workdir: string): PromptSection {
  return {
    id: "identity",
    text: `You are a coding agent at ${workdir}. Use tools to solve tasks. Act, don't explain.`,
  };
}

export function buildSystemPrompt(sections: PromptSection[]): string {
  const stable = sections.filter((section) => !section.dynamic);
  const dynamic = sections.filter((section) => section.dynamic);
  return [...stable, ...dynamic].map((section) => section.text).join("\n\n");
}

/** The main agent's sections, in chapter order. */
export function mainSections(workdir: string, skills: Skill[]): PromptSection[] {
  return [
    identitySection(workdir),
    shellSection(workdir),
    filesSection(workdir),
    permissionsSection(),
    hooksSection(),
    planningSection(),
    delegationSection(),
    skillsSection(skills),
    contextSection(),
  ];
}

/** A subagent's sections: the base ones, then its own (it has no todo_write and no task). */
export function childSections(workdir: string): PromptSection[] {
  return [
    identitySection(workdir),
    shellSection(workdir),
    filesSection(workdir),
    permissionsSection(),
    hooksSection(),
    subagentSection(),
    childContextSection(),
  ];
}
