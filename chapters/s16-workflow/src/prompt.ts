/**
 * The system prompt: sections joined by blank lines. The identity line comes first, then
 * each mechanism's sections in list order; sections that change during a session
 * (`dynamic`) go after every stable one, so the stable prefix stays cacheable. Each mechanism file owns its section; this file only puts them in order.
 * From s15 it also remembers where a built prompt's stable part ends (`stableLength`), so
 * the cache breakpoint (cost.ts) goes right after it.
 */
import type { Mechanism, Role } from "./contract.ts";

export interface PromptSection {
  id: string;
  text: string;
  /** Rebuilt during the session: placed after every stable section. */
  dynamic?: boolean;
}

export function identitySection(workdir: string): PromptSection {
  return {
    id: "identity",
    text: `You are a coding agent at ${workdir}. Use tools to solve tasks. Act, don't explain.`,
  };
}

/** Where the stable part ends, for the prompts built lately (a few agents, a few versions). */
const stableEnds = new Map<string, number>();
const REMEMBERED_PROMPTS = 64;

export function buildSystemPrompt(sections: PromptSection[]): string {
  const stable = sections.filter((section) => !section.dynamic);
  const dynamic = sections.filter((section) => section.dynamic);
  const prompt = [...stable, ...dynamic].map((section) => section.text).join("\n\n");
  stableEnds.delete(prompt);
  stableEnds.set(prompt, stable.map((section) => section.text).join("\n\n").length);
  if (stableEnds.size > REMEMBERED_PROMPTS) stableEnds.delete(stableEnds.keys().next().value!);
  return prompt;
}

/** How many leading characters of `prompt` are stable sections, if this file built it. */
export function stableLength(prompt: string): number | null {
  return stableEnds.get(prompt) ?? null;
}

/** The system prompt of an agent of `role`: identity, then every mechanism's sections. */
export function systemPrompt(workdir: string, mechanisms: Mechanism[], role: Role): string {
  return buildSystemPrompt([
    identitySection(workdir),
    ...mechanisms.flatMap((mechanism) => mechanism.sections?.(role) ?? []),
  ]);
}
