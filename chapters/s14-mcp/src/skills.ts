/**
 * Skills (s07): knowledge in two tiers, so the model pays for a document only when it
 * needs it.
 *
 *   catalog     one `- name: description` line per skill, always in the system prompt
 *   load_skill  the whole SKILL.md, returned as an ordinary tool_result on request
 *
 * A skill is a folder with a `SKILL.md`: YAML frontmatter (`name`, `description`) between
 * `---` lines (frontmatter.ts reads it), then Markdown instructions. The folders live where Claude Code keeps them,
 * `<WORKDIR>/skills/` and `<WORKDIR>/.claude/skills/`, and are scanned once at start; the
 * text captured then is what `load_skill` returns, so edits need a restart.
 *
 * A plugin's skills (plugins.ts) join the catalog as `<plugin>:<name>`.
 *
 * `load_skill` looks skills up by name in an own-key map and never turns its input into a
 * path: the tool can only return files the scan already accepted. A broken skill never
 * stops the start: it falls back or is skipped, and a diagnostic tells the learner why.
 */
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { defineTool, nullLog, type Parsed, type SessionLog } from "shared";
import type { Mechanism, Role } from "./contract.ts";
import { kindOf, parseFrontmatter } from "./frontmatter.ts";
import type { Harness } from "./harness.ts";
import { type Plugin, pluginName, withPluginRoot } from "./plugins.ts";

/** Where skills live, scanned in this order (Claude Code's project folder second). */
export const SKILL_ROOTS = ["skills", ".claude/skills"];
/** The file that makes a folder a skill. */
export const SKILL_FILE = "SKILL.md";

// ---------------------------------------------------------------------------------------
// Scanning: the registry, built once at start.
// ---------------------------------------------------------------------------------------

export interface Skill {
  name: string;
  description: string;
  /** The SKILL.md it came from (under its root, as scanned; symlinks not resolved). */
  path: string;
  /** The whole file as read at start, frontmatter included: what load_skill returns. */
  text: string;
  /** `disable-model-invocation: true`: only you start it (as /name); the model never sees it. */
  userOnly?: boolean;
}

export interface LoadedSkills {
  /** In catalog order: roots in SKILL_ROOTS order, folders in code-point order. */
  skills: Skill[];
  /** Diagnostics for the learner (the caller prints each with a `[skills] ` prefix). */
  problems: string[];
}

/**
 * Scans `<workdir>/skills/*\/SKILL.md`, then `<workdir>/.claude/skills/*\/SKILL.md`.
 * Hidden folders, loose files and folders without a SKILL.md are not skills and are passed
 * over silently; a SKILL.md that is not a regular file, resolves outside
 * its root or cannot be read is skipped with a diagnostic. The first skill with a name
 * wins; later ones are reported.
 */
export function loadSkills(workdir: string): LoadedSkills {
  const base = path.resolve(workdir);
  const skills: Skill[] = [];
  const problems: string[] = [];
  const byName = new Map<string, Skill>();
  const shown = (file: string) => path.relative(base, file);

  for (const root of SKILL_ROOTS) {
    for (const found of scanRoot(base, root, problems)) {
      const skill = readSkill(found, shown(found.path), problems);
      const kept = byName.get(skill.name);
      if (kept) {
        problems.push(
          `duplicate skill name '${skill.name}' in ${shown(skill.path)} ignored ` +
            `(kept ${shown(kept.path)})`,
        );
        continue;
      }
      byName.set(skill.name, skill);
      skills.push(skill);
    }
  }
  return { skills, problems };
}

/**
 * The plugins' skills, each named `<plugin>:<name>` with ${CLAUDE_PLUGIN_ROOT} filled in;
 * one whose name the project's skills already have is reported (the project's answers to
 * the plain name, this one to its own).
 */
export function loadPluginSkills(plugins: readonly Plugin[], taken: Skill[]): LoadedSkills {
  const skills: Skill[] = [];
  const problems: string[] = [];
  for (const plugin of plugins) {
    for (const file of plugin.skills) {
      const shown = `${plugin.name} (${path.relative(plugin.root, file)})`;
      let text: string;
      try {
        text = withPluginRoot(readFileSync(file, "utf8"), plugin);
      } catch (error) {
        problems.push(`${shown}: cannot be read (${errorCode(error)}); skipped`);
        continue;
      }
      const skill = readSkill(
        { folder: path.basename(path.dirname(file)), path: file, text },
        shown,
        problems,
      );
      const clash = taken.find((other) => other.name === skill.name);
      if (clash) {
        problems.push(
          `${shown}: the project's skill '${skill.name}' keeps that name; this one is ${pluginName(plugin, skill.name)}`,
        );
      }
      skills.push({ ...skill, name: pluginName(plugin, skill.name) });
    }
  }
  return { skills, problems };
}

interface SkillFile {
  folder: string;
  path: string;
  text: string;
}

/** One root's readable SKILL.md files, in code-point order of their folder names. */
function scanRoot(base: string, root: string, problems: string[]): SkillFile[] {
  const dir = path.join(base, root);
  const shown = path.relative(base, dir);
  let entries: string[];
  let realRoot: string;
  try {
    entries = readdirSync(dir);
    realRoot = realpathSync(dir);
  } catch (error) {
    // No root (or a file in its place) just means no skills there.
    const code = errorCode(error);
    if (code !== "ENOENT" && code !== "ENOTDIR") {
      problems.push(`${shown}/: cannot be listed (${code}); skipped`);
    }
    return [];
  }

  const files: SkillFile[] = [];
  for (const folder of entries.sort(byCodePoint)) {
    // Like the shell's `*`, hidden folders are not matched.
    if (folder.startsWith(".")) continue;
    // stat follows a symlinked folder; where it leads is checked below, through SKILL.md.
    if (!isFolder(path.join(dir, folder))) continue;
    const file = path.join(dir, folder, SKILL_FILE);
    const report = (problem: string) =>
      problems.push(`${path.relative(base, file)}: ${problem}; skipped`);
    try {
      // lstat, not stat: a SKILL.md symlink that leads nowhere is reported, not ignored.
      if (!lstatSync(file, { throwIfNoEntry: false })) continue;
    } catch (error) {
      report(`cannot be read (${errorCode(error)})`);
      continue;
    }
    const text = readInside(file, realRoot, `${shown}/`, report);
    if (text !== null) files.push({ folder, path: file, text });
  }
  return files;
}

/** A folder, or a symlink to one; anything else (a loose file, a link loop) is not. */
function isFolder(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The text of `file` if its real path is a regular file inside `realRoot`, else null and
 * one problem. The check runs on the resolved path, so a symlinked skill folder that
 * stays inside the root is fine and a symlink out of it is not.
 */
function readInside(
  file: string,
  realRoot: string,
  rootShown: string,
  report: (problem: string) => void,
): string | null {
  let real: string;
  try {
    real = realpathSync(file);
  } catch (error) {
    report(`cannot be resolved (${errorCode(error)})`);
    return null;
  }
  if (!real.startsWith(realRoot + path.sep)) {
    report(`resolves to ${real}, outside ${rootShown}`);
    return null;
  }
  try {
    if (!statSync(real).isFile()) {
      report("is not a regular file");
      return null;
    }
    return readFileSync(real, "utf8");
  } catch (error) {
    report(`cannot be read (${errorCode(error)})`);
    return null;
  }
}

/**
 * Name and description, with Claude Code's fallbacks: the name falls back to the
 * folder name; the description to the body's first line (the whole untrimmed text when
 * there is no usable frontmatter). Each fallback is silent to the model but reported.
 */
function readSkill(found: SkillFile, shown: string, problems: string[]): Skill {
  const { meta, body, problem } = parseFrontmatter(found.text);
  const report = (text: string) => problems.push(`${shown}: ${text}`);
  if (problem) {
    report(`${problem}; using the folder name and the body's first line`);
  }

  let name = found.folder;
  let description = body.split("\n")[0] ?? "";
  if (meta) {
    const named = stringField(meta, "name");
    if (named.ok) name = named.value;
    else report(`name ${named.error}; using the folder name '${found.folder}'`);
    const described = stringField(meta, "description");
    if (described.ok) description = described.value;
    else report(`description ${described.error}; using the body's first line`);
  }

  description = normalise(description);
  const userOnly = meta?.["disable-model-invocation"] === true;
  if (description === "" && !userOnly) {
    report("description is empty; the model cannot tell when to load this skill");
  }
  return {
    name,
    description,
    path: found.path,
    text: found.text,
    ...(userOnly ? { userOnly } : {}),
  };
}

/** A non-empty string field, trimmed; otherwise what is wrong with it. */
function stringField(meta: Record<string, unknown>, key: string): Parsed<string> {
  // Own keys only: a `__proto__` key in the YAML must not supply a name.
  if (!Object.hasOwn(meta, key)) return { ok: false, error: "is missing" };
  const value = meta[key];
  if (value === null || value === undefined) return { ok: false, error: "is empty" };
  if (typeof value !== "string") return { ok: false, error: `is ${kindOf(value)}, not a string` };
  if (value.trim() === "") return { ok: false, error: "is empty" };
  return { ok: true, value: value.trim() };
}

/** One catalog line's worth: no leading heading marks, every whitespace run one space. */
function normalise(description: string): string {
  return description
    .replace(/^[#\s]+/, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** Code-point order (UTF-8 byte order), not locale order: `B-skill` before `a-skill`. */
function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function errorCode(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ?? (error as Error).message;
}

// ---------------------------------------------------------------------------------------
// The catalog (system prompt, /skills) and the load_skill tool.
// ---------------------------------------------------------------------------------------

/** One `- name: description` line per skill, or `(no skills found)`. */
export function catalog(skills: Skill[]): string {
  if (skills.length === 0) return "(no skills found)";
  return skills.map((skill) => `- ${skill.name}: ${skill.description}`.trimEnd()).join("\n");
}

/** This mechanism's part of the system prompt: the catalog only, never a body. */
export function skillsSection(skills: Skill[]) {
  return {
    id: "skills",
    text:
      `Skills available:\n${catalog(skills)}\n` +
      "Use load_skill to read the full instructions when a skill applies.",
  };
}

/** What the `/skills` command prints: the catalog, then the start-up diagnostics. */
export function describeSkills(skills: Skill[], problems: string[]): string {
  const lines = problems.map((problem) => `[skills] ${problem}`);
  return [catalog(skills), ...(lines.length > 0 ? ["", ...lines] : [])].join("\n");
}

/**
 * `load_skill` (Claude Code's `Skill`): the whole SKILL.md captured at start. Each load
 * goes to the session log as `load <name> (<N> chars)` or `not found: <name>`.
 */
export function loadSkillTool(skills: Skill[], log: SessionLog = nullLog()) {
  // A Map, not an object: `constructor` or `__proto__` must be unknown skills.
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  const available = skills.length > 0 ? skills.map((skill) => skill.name).join(", ") : "none";
  return defineTool({
    name: "load_skill",
    aliases: ["Skill"],
    claudeCode: { name: "Skill" },
    description:
      "Load a skill's full instructions (its whole SKILL.md) by the name shown in the " +
      "Skills catalog. Load a skill before a task it applies to.",
    input_schema: {
      type: "object",
      properties: {
        name: { type: "string", description: "The skill's name, exactly as in the catalog." },
      },
      required: ["name"],
    },
    async run({ name }, context) {
      const skill = byName.get(name);
      if (!skill) {
        log.transcript("SKILL", `not found: ${name}`, context.scope);
        return {
          content: `Error: Unknown skill '${name}'. Available: ${available}`,
          isError: true,
        };
      }
      log.transcript("SKILL", `load ${name} (${skill.text.length} chars)`, context.scope);
      // As Claude Code does: the folder first, so the files the skill names can be found.
      return {
        content: `Base directory for this skill: ${path.dirname(skill.path)}\n\n${skill.text}`,
      };
    },
  });
}

/**
 * Skills as a mechanism: scanned once at start; the catalog section and `load_skill` for
 * every agent but a subagent (its task is narrow and its prompt short); `/skills`; the
 * count and any problems in the banner.
 */
export function skillsMechanism(
  harness: Pick<Harness, "workdir" | "log" | "printer" | "plugins">,
): Mechanism {
  const loaded = loadSkills(harness.workdir);
  const fromPlugins = loadPluginSkills(harness.plugins.plugins, loaded.skills);
  const problems = [...loaded.problems, ...fromPlugins.problems];
  // A skill only you may start is a command (commands.ts), never the model's to load.
  const skills = [...loaded.skills, ...fromPlugins.skills].filter((skill) => !skill.userOnly);
  const hasSkills = (role: Role) => role !== "subagent";
  const tool = loadSkillTool(skills, harness.log);
  return {
    name: "skills",
    tools: (role) => (hasSkills(role) ? [tool] : []),
    sections: (role) => (hasSkills(role) ? [skillsSection(skills)] : []),
    commands: {
      skills: {
        description: "list the skills and any problems loading them",
        run: async () => {
          harness.printer.line(describeSkills(skills, problems));
          return undefined;
        },
      },
    },
    start: () => {
      harness.log.record("skills", { catalog: catalog(skills), problems });
      const names = skills.map((skill) => skill.name);
      // No skills, no line: a workspace without skills looks like the chapters before.
      return [
        ...problems.map((problem) => ({ text: `[skills] ${problem}`, tone: "warn" as const })),
        ...(names.length > 0
          ? [
              {
                text: `[skills] ${names.length} skill(s): ${names.join(", ")}`,
                tone: "dim" as const,
              },
            ]
          : []),
      ];
    },
  };
}
