/**
 * The system prompt: sections joined by blank lines. The identity line comes first, then
 * each mechanism's sections in list order; sections that change during a session
 * (`dynamic`) go after every stable one, so the stable prefix stays cacheable. Each mechanism file owns its section; this file only puts them in order.
 * From s15 a prompt can also be built in its two parts (`SystemParts`): the loop sends only
 * the stable part as the system prompt, where the cache breakpoint (cost.ts) goes, and each
 * dynamic section as a reminder in the conversation (loop.ts), so the system prompt stays
 * byte-identical for the whole session.
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

/** A built prompt in its two parts: the stable sections, then the dynamic ones. */
export interface SystemParts {
  stable: string;
  dynamic: string;
  /** The dynamic sections themselves, one reminder each. */
  notes: PromptSection[];
}

export function buildSystemParts(sections: PromptSection[]): SystemParts {
  const text = (list: PromptSection[]) => list.map((section) => section.text).join("\n\n");
  const notes = sections.filter((section) => section.dynamic);
  return {
    stable: text(sections.filter((section) => !section.dynamic)),
    dynamic: text(notes),
    notes,
  };
}

/** The prompt as one text: the parts joined by a blank line, as sections are. */
export function joinParts({ stable, dynamic }: SystemParts): string {
  return stable && dynamic ? `${stable}\n\n${dynamic}` : stable || dynamic;
}

export function buildSystemPrompt(sections: PromptSection[]): string {
  return joinParts(buildSystemParts(sections));
}

/** The system prompt of an agent of `role`: identity, then every mechanism's sections. */
export function systemPrompt(workdir: string, mechanisms: Mechanism[], role: Role): string {
  return joinParts(systemParts(workdir, mechanisms, role));
}

/** The same prompt in its two parts. */
export function systemParts(workdir: string, mechanisms: Mechanism[], role: Role): SystemParts {
  return buildSystemParts([
    identitySection(workdir),
    ...mechanisms.flatMap((mechanism) => mechanism.sections?.(role) ?? []),
  ]);
}
