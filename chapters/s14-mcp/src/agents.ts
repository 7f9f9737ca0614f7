/**
 * Agent definitions: Claude Code's custom subagents, one Markdown file each, read from the
 * project's `.claude/agents/` and the user's `~/.claude/agents/` (the project's wins a name
 * both have).
 *
 *   ---
 *   name: code-reviewer              lowercase letters, digits and hyphens
 *   description: Reviews a change…   when to use it: the model reads this
 *   tools: Read, Glob, Bash          optional: only these (absent: every tool a child has)
 *   model: sonnet                    optional: sonnet, opus, haiku, inherit or a model id
 *   ---
 *   You are a careful reviewer…      the body: the agent's own instructions
 *
 * Files are read once at start. A definition that cannot be used (broken frontmatter, no
 * name or description, a `tools` line that is not a list of names) is reported with its
 * file and skipped; the session goes on. A plugin's agents (plugins.ts) are
 * `<plugin>:<name>`.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { ToolDefinition, ToolMap } from "shared";
import { kindOf, parseFrontmatter } from "./frontmatter.ts";
import { type Plugin, pluginName, withPluginRoot } from "./plugins.ts";

/** Where definitions live, under the workspace and under the home folder. */
export const AGENTS_DIR = ".claude/agents";
/** Claude Code's model aliases, and the variable that names the model each stands for. */
export const MODEL_ALIASES: Record<string, string> = {
  sonnet: "ANTHROPIC_DEFAULT_SONNET_MODEL",
  opus: "ANTHROPIC_DEFAULT_OPUS_MODEL",
  haiku: "ANTHROPIC_DEFAULT_HAIKU_MODEL",
};

export interface AgentDefinition {
  name: string;
  description: string;
  /** The tool names its `tools` line gives, in Claude Code's names or the course's; null: all. */
  tools: string[] | null;
  /** Its `model` line, as written; null: the session's model. */
  model: string | null;
  /** The body: the agent's instructions, added to the child's system prompt. */
  prompt: string;
  /** Where it came from, as the banner shows it (`.claude/agents/x.md`, `~/.claude/agents/x.md`). */
  file: string;
}

export interface LoadedAgents {
  /** Project definitions first, then the user's, each folder in name order. */
  agents: AgentDefinition[];
  /** One line per file that was skipped or shadowed, with its path. */
  problems: string[];
}

/** Reads `<workdir>/.claude/agents/*.md`, then `<home>/.claude/agents/*.md`. */
export function loadAgents(workdir: string, home: string | undefined): LoadedAgents {
  const agents: AgentDefinition[] = [];
  const problems: string[] = [];
  const roots = [{ dir: path.join(workdir, AGENTS_DIR), shown: AGENTS_DIR }];
  if (home) roots.push({ dir: path.join(home, AGENTS_DIR), shown: `~/${AGENTS_DIR}` });
  for (const root of roots) {
    for (const name of markdownFiles(root.dir, root.shown, problems)) {
      const file = `${root.shown}/${name}`;
      const agent = readAgent(path.join(root.dir, name), file, problems);
      if (!agent) continue;
      const kept = agents.find((other) => other.name === agent.name);
      if (kept) {
        problems.push(
          `${file}: agent '${agent.name}' is also in ${kept.file}, which wins; skipped`,
        );
        continue;
      }
      agents.push(agent);
    }
  }
  return { agents, problems };
}

/**
 * The plugins' definitions as `<plugin>:<name>`, ${CLAUDE_PLUGIN_ROOT} filled in; a name the
 * project's agents have is reported (the project's answers to the plain name).
 */
export function loadPluginAgents(
  plugins: readonly Plugin[],
  taken: AgentDefinition[],
): LoadedAgents {
  const agents: AgentDefinition[] = [];
  const problems: string[] = [];
  for (const plugin of plugins) {
    for (const file of plugin.agents) {
      const shown = `${plugin.name} (${path.relative(plugin.root, file)})`;
      const agent = readAgent(file, shown, problems, (text) => withPluginRoot(text, plugin));
      if (!agent) continue;
      if (taken.some((other) => other.name === agent.name)) {
        problems.push(
          `${shown}: the project's agent '${agent.name}' keeps that name; this one is ${pluginName(plugin, agent.name)}`,
        );
      }
      agents.push({ ...agent, name: pluginName(plugin, agent.name) });
    }
  }
  return { agents, problems };
}

function markdownFiles(dir: string, shown: string, problems: string[]): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => name.endsWith(".md") && !name.startsWith("."))
      .sort();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // No folder is no definitions.
    if (code !== "ENOENT" && code !== "ENOTDIR")
      problems.push(`${shown}/: cannot be listed (${code})`);
    return [];
  }
}

/** One definition, or null after reporting why it cannot be used. */
function readAgent(
  file: string,
  shown: string,
  problems: string[],
  fill: (text: string) => string = (text) => text,
): AgentDefinition | null {
  const skip = (why: string) => {
    problems.push(`${shown}: ${why}; skipped`);
    return null;
  };
  let text: string;
  try {
    text = fill(readFileSync(file, "utf8"));
  } catch (error) {
    return skip(`cannot be read (${(error as NodeJS.ErrnoException).code})`);
  }
  const { meta, body, problem } = parseFrontmatter(text);
  if (problem || !meta) return skip(problem ?? "no frontmatter");
  const name = meta.name;
  if (typeof name !== "string" || !/^[a-z0-9][a-z0-9-]*$/.test(name)) {
    return skip(
      name === undefined
        ? "frontmatter has no name"
        : `name ${JSON.stringify(name)} is not lowercase letters, digits and hyphens`,
    );
  }
  const description = meta.description;
  if (typeof description !== "string" || !description.trim()) {
    return skip("frontmatter has no description (the model reads it to choose the agent)");
  }
  const tools = toolList(meta.tools);
  if (tools === undefined) {
    return skip(`tools is ${kindOf(meta.tools)}; write names separated by commas, or a list`);
  }
  const model = meta.model ?? null;
  if (model !== null && (typeof model !== "string" || !model.trim())) {
    return skip(`model is ${kindOf(model)}; write sonnet, opus, haiku, inherit or a model id`);
  }
  if (!body) return skip("the body is empty: it holds the agent's instructions");
  return {
    name,
    description: description.trim().replace(/\s+/g, " "),
    tools,
    model: model?.trim() ?? null,
    prompt: body,
    file: shown,
  };
}

/** `Read, Bash` or a YAML list: the names; absent: null (every tool); undefined: unusable. */
function toolList(value: unknown): string[] | null | undefined {
  if (value === undefined || value === null) return null;
  const names = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(names) || names.some((name) => typeof name !== "string")) return undefined;
  return (names as string[]).map((name) => name.trim()).filter(Boolean);
}

/**
 * The tools a definition gives its child, from the tools a child has: a name matches a
 * tool's own name or the Claude Code name it declares. Names no tool has come back in
 * `unknown`.
 */
export function agentTools(
  agent: AgentDefinition,
  tools: ToolMap,
): { tools: ToolMap; unknown: string[] } {
  if (agent.tools === null) return { tools, unknown: [] };
  const named = (tool: ToolDefinition, name: string) =>
    tool.name === name || tool.claudeCode?.name === name;
  const kept = [...tools].filter(([, tool]) => agent.tools?.some((name) => named(tool, name)));
  const unknown = agent.tools.filter((name) => ![...tools.values()].some((t) => named(t, name)));
  return { tools: new Map(kept), unknown };
}

/**
 * The model a definition runs on: the session's for none or `inherit`; for an alias, the
 * model its variable names (Claude Code's `ANTHROPIC_DEFAULT_SONNET_MODEL` …), else the
 * session's with a note why; any other value is a model id, sent as written.
 */
export function agentModel(
  agent: AgentDefinition,
  session: string,
  env: Record<string, string | undefined>,
): { model: string; note: string | null } {
  if (agent.model === null || agent.model === "inherit") return { model: session, note: null };
  const variable = MODEL_ALIASES[agent.model];
  if (variable === undefined) return { model: agent.model, note: null };
  const chosen = env[variable]?.trim();
  if (chosen) return { model: chosen, note: null };
  return {
    model: session,
    note: `model '${agent.model}' is an alias: set ${variable} to choose its model; using ${session}`,
  };
}
