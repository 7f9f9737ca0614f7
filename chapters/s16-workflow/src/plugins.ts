/**
 * Plugins: Claude Code's unit of extension. A plugin is a folder that bundles what the
 * harness already loads from a project, each part in the shape the project's own takes:
 *
 *   my-kit/
 *     .claude-plugin/plugin.json   {"name": "my-kit", "version", "description", "author"}
 *     commands/*.md                /my-kit:name (and /name, when no other command has it)
 *     agents/*.md                  subagent_type "my-kit:name"
 *     skills/<name>/SKILL.md       the skill "my-kit:name"
 *     hooks/hooks.json             {"hooks": {…}} as in settings; CLAUDE_PLUGIN_ROOT is set
 *     .mcp.json                    {"mcpServers": {…}}: the server "plugin:my-kit:<name>"
 *
 *   ${CLAUDE_PLUGIN_ROOT} stands for the folder in commands, agents, skills, hooks and servers.
 *
 * Where they come from, read once before the mechanisms are made:
 *   --plugin-dir <path> (repeatable)    your own choice: loaded without a question
 *   enabledPlugins in .claude/settings*.json, {"name@market": true}, with the market a folder
 *   named in extraKnownMarketplaces ({"source": {"source": "directory", "path": "…"}}) whose
 *   .claude-plugin/marketplace.json lists the plugin: the project's choice, so the first load
 *   lists what the plugin runs and asks (the answer is kept in .harness/plugins-trusted.json;
 *   a session without a terminal skips the plugin and says why)
 *
 * Every problem (a manifest that is not JSON, a bad name, a path outside the plugin, a
 * market that cannot be read) is reported with its file; the plugin, or that part, is
 * skipped and the session goes on.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { asObject, type Env, harnessPath, readJsonState, writeFileAtomic } from "shared";
import type { Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { loadSettings } from "./settings.ts";

export const MANIFEST = ".claude-plugin/plugin.json";
export const MARKETPLACE = ".claude-plugin/marketplace.json";
/** Where the answers to the trust question are kept, under `.harness/`. */
export const TRUST_FILE = "plugins-trusted.json";
/** The folders and files a plugin has when its manifest names no other. */
const DEFAULTS = {
  commands: "./commands",
  agents: "./agents",
  skills: "./skills",
  hooks: "./hooks/hooks.json",
  mcpServers: "./.mcp.json",
};
/** Claude Code's rule for a plugin's name: kebab-case. */
const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** Part of a plugin given as JSON: from a file, or inline in the manifest. */
export interface PluginJson {
  /** As messages show it: `my-kit (hooks/hooks.json)`. */
  file: string;
  value: Record<string, unknown>;
}

export interface Plugin {
  name: string;
  version?: string;
  description?: string;
  /** The folder, absolute: what ${CLAUDE_PLUGIN_ROOT} stands for. */
  root: string;
  /** Why it is loaded: `--plugin-dir` or the settings file that enables it. */
  from: string;
  /** Markdown files, absolute paths. */
  commands: string[];
  agents: string[];
  /** SKILL.md files, absolute paths. */
  skills: string[];
  /** Hook configurations, each with a `hooks` object in the settings' shape. */
  hooks: PluginJson[];
  /** Server tables, each an object of servers as `.mcp.json`'s `mcpServers`. */
  mcpServers: PluginJson[];
}

export interface LoadedPlugins {
  plugins: Plugin[];
  /** One line per problem, naming its file; and why a plugin was skipped. */
  problems: string[];
}

/** How a plugin's files name its folder, literally. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the variable as plugins write it
export const ROOT_VARIABLE = "${CLAUDE_PLUGIN_ROOT}";

/** `text` with ${CLAUDE_PLUGIN_ROOT} replaced by the plugin's folder. */
export function withPluginRoot(text: string, plugin: Pick<Plugin, "root">): string {
  return text.split(ROOT_VARIABLE).join(plugin.root);
}

/** The namespaced name of a plugin's part: `my-kit:review`. */
export function pluginName(plugin: Pick<Plugin, "name">, name: string): string {
  return `${plugin.name}:${name}`;
}

// --- Reading one plugin -------------------------------------------------------------------

/** The plugin in `root`, or null after reporting why it cannot be loaded. */
export function readPlugin(root: string, from: string, problems: string[]): Plugin | null {
  const shown = (relative: string) => path.join(root, relative);
  if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) {
    problems.push(`${root}: no such folder (${from}); plugin skipped`);
    return null;
  }
  const manifestFile = shown(MANIFEST);
  let manifest: Record<string, unknown> = {};
  let text: string | null = null;
  try {
    text = readFileSync(manifestFile, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      problems.push(
        `${manifestFile}: cannot be read (${(error as Error).message}); plugin skipped`,
      );
      return null;
    }
  }
  if (text !== null) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      problems.push(`${manifestFile}: invalid JSON (${(error as Error).message}); plugin skipped`);
      return null;
    }
    const object = asObject(value);
    if (!object) {
      problems.push(`${manifestFile}: must be a JSON object; plugin skipped`);
      return null;
    }
    manifest = object;
  }
  // No manifest: Claude Code names the plugin after its folder.
  const name = text === null ? path.basename(root) : manifest.name;
  if (typeof name !== "string" || !NAME.test(name)) {
    const why =
      name === undefined
        ? "has no name"
        : `name ${JSON.stringify(name)} is not kebab-case (lowercase letters, digits, hyphens)`;
    problems.push(`${text === null ? root : manifestFile}: ${why}; plugin skipped`);
    return null;
  }
  const warn = (field: string, rule: string) =>
    problems.push(`${manifestFile}: ${field} ${rule}; ignored`);
  const optionalText = (field: string): string | undefined => {
    const value = manifest[field];
    if (value === undefined) return undefined;
    if (typeof value === "string") return value;
    warn(field, "must be a string");
    return undefined;
  };
  const version = optionalText("version");
  if (version !== undefined && !/^\d+\.\d+\.\d+([-+].*)?$/.test(version)) {
    warn("version", `${JSON.stringify(version)} is not a semantic version like 1.2.0`);
  }
  const description = optionalText("description");
  const author = manifest.author;
  if (author !== undefined && typeof asObject(author)?.name !== "string") {
    warn("author", 'must be an object with a "name"');
  }
  const plugin: Plugin = {
    name,
    ...(version === undefined ? {} : { version }),
    ...(description === undefined ? {} : { description }),
    root,
    from,
    commands: [],
    agents: [],
    skills: [],
    hooks: [],
    mcpServers: [],
  };
  for (const kind of ["commands", "agents", "skills"] as const) {
    for (const found of componentPaths(manifest, kind, root, manifestFile, problems)) {
      plugin[kind].push(...filesOf(kind, found));
    }
  }
  plugin.hooks = jsonParts(manifest, "hooks", plugin, manifestFile, problems);
  plugin.mcpServers = jsonParts(manifest, "mcpServers", plugin, manifestFile, problems);
  return plugin;
}

/**
 * A component's paths, absolute: the manifest's (which replace the default folder, as in
 * Claude Code), else the default when it exists. Each must start with `./` and stay inside.
 */
function componentPaths(
  manifest: Record<string, unknown>,
  kind: "commands" | "agents" | "skills",
  root: string,
  manifestFile: string,
  problems: string[],
): string[] {
  const given = manifest[kind];
  if (given === undefined) {
    const fallback = path.join(root, DEFAULTS[kind]);
    return statSync(fallback, { throwIfNoEntry: false }) ? [fallback] : [];
  }
  const list = typeof given === "string" ? [given] : given;
  if (!Array.isArray(list)) {
    problems.push(`${manifestFile}: ${kind} must be a path or a list of paths; ignored`);
    return [];
  }
  return list.flatMap((entry, i) => {
    const at = `${manifestFile}: ${kind}${typeof given === "string" ? "" : `[${i}]`}`;
    const found = insidePath(entry, root);
    if (typeof found !== "string") {
      problems.push(`${at} ${found.why}; ignored`);
      return [];
    }
    if (!statSync(found, { throwIfNoEntry: false })) {
      problems.push(`${at} ${JSON.stringify(entry)} does not exist; ignored`);
      return [];
    }
    return [found];
  });
}

/** `./x` inside `root`, absolute; or why it is not one. */
function insidePath(entry: unknown, root: string): string | { why: string } {
  if (typeof entry !== "string" || !entry.startsWith("./")) {
    return { why: `${JSON.stringify(entry)} must be a path that starts with ./` };
  }
  const full = path.resolve(root, entry);
  if (full !== root && !full.startsWith(`${root}${path.sep}`)) {
    return { why: `${JSON.stringify(entry)} leads outside the plugin` };
  }
  return full;
}

/** The component files at `found`: a Markdown file itself, or those in a folder. */
function filesOf(kind: "commands" | "agents" | "skills", found: string): string[] {
  if (!statSync(found).isDirectory()) return kind === "skills" ? [] : [found];
  const names = readdirSync(found)
    .filter((name) => !name.startsWith("."))
    .sort();
  if (kind === "skills") {
    return names
      .map((name) => path.join(found, name, "SKILL.md"))
      .filter((file) => statSync(file, { throwIfNoEntry: false })?.isFile());
  }
  return names.filter((name) => name.endsWith(".md")).map((name) => path.join(found, name));
}

/**
 * Hooks or servers: inline objects in the manifest, paths to JSON files (`hooks.json` holds
 * `{"hooks": …}`, `.mcp.json` `{"mcpServers": …}`), or the default file when it exists.
 */
function jsonParts(
  manifest: Record<string, unknown>,
  kind: "hooks" | "mcpServers",
  plugin: Plugin,
  manifestFile: string,
  problems: string[],
): PluginJson[] {
  const given = manifest[kind];
  const entries =
    given === undefined
      ? statSync(path.join(plugin.root, DEFAULTS[kind]), { throwIfNoEntry: false })
        ? [DEFAULTS[kind]]
        : []
      : Array.isArray(given)
        ? given
        : [given];
  return entries.flatMap((entry, i): PluginJson[] => {
    const at = `${manifestFile}: ${kind}${Array.isArray(given) ? `[${i}]` : ""}`;
    const inline = asObject(entry);
    if (inline) {
      // Inline: the hooks object itself, or the servers themselves.
      const value = kind === "hooks" && asObject(inline.hooks) ? inline : { [kind]: inline };
      return [{ file: `${plugin.name} (${MANIFEST})`, value }];
    }
    const file = insidePath(entry, plugin.root);
    if (typeof file !== "string") {
      problems.push(`${at} ${file.why}; ignored`);
      return [];
    }
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      const why =
        error instanceof SyntaxError
          ? `invalid JSON (${error.message})`
          : `cannot be read (${(error as NodeJS.ErrnoException).code})`;
      problems.push(`${file}: ${why}; its ${kind} skipped`);
      return [];
    }
    const object = asObject(value);
    if (!object || !asObject(object[kind])) {
      problems.push(`${file}: must be an object with a "${kind}" object; its ${kind} skipped`);
      return [];
    }
    return [{ file: `${plugin.name} (${path.relative(plugin.root, file)})`, value: object }];
  });
}

// --- Where plugins come from ----------------------------------------------------------------

/** `--plugin-dir <path>` and `--plugin-dir=<path>`, each resolved against `base`. */
export function pluginDirArgs(argv: string[], base: string, problems: string[]): string[] {
  const dirs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") continue;
    const inline = arg.startsWith("--plugin-dir=") ? arg.slice("--plugin-dir=".length) : null;
    const value = inline ?? (arg === "--plugin-dir" ? argv[++i] : undefined);
    if (value === undefined || value === "") {
      problems.push(
        arg.startsWith("--plugin-dir")
          ? "--plugin-dir needs a folder; ignored"
          : `unknown argument ${JSON.stringify(arg)}; ignored (this harness takes --plugin-dir <path>)`,
      );
      continue;
    }
    dirs.push(path.resolve(base, value));
  }
  return dirs;
}

/** The plugins the project's settings enable, found in the markets those settings name. */
export function enabledPlugins(
  workdir: string,
  problems: string[],
): Array<{ root: string; from: string; key: string }> {
  const settings = loadSettings(workdir);
  const markets = new Map<string, { root: string; file: string }>();
  const enabled = new Map<string, string>();
  for (const file of settings.files) {
    const known = file.extraKnownMarketplaces;
    if (known !== undefined && !asObject(known)) {
      problems.push(`${file.path}: extraKnownMarketplaces must be an object; ignored`);
    }
    for (const [market, raw] of Object.entries(asObject(known) ?? {})) {
      const source = asObject(asObject(raw)?.source);
      const where = `${file.path}: extraKnownMarketplaces.${market}.source`;
      if (source?.source !== "directory" || typeof source.path !== "string") {
        const kind = source?.source === undefined ? "missing" : JSON.stringify(source.source);
        problems.push(
          `${where} is ${kind}; this harness reads a market from a folder only ({"source": "directory", "path": "…"}): clone it and name the folder`,
        );
        continue;
      }
      markets.set(market, { root: path.resolve(workdir, source.path), file: file.path });
    }
    const wanted = file.enabledPlugins;
    if (wanted !== undefined && !asObject(wanted)) {
      problems.push(`${file.path}: enabledPlugins must be an object; ignored`);
    }
    for (const [key, on] of Object.entries(asObject(wanted) ?? {})) {
      if (on === true) enabled.set(key, file.label);
      else enabled.delete(key); // a later file (settings.local.json) may switch one off
    }
  }
  const found: Array<{ root: string; from: string; key: string }> = [];
  const listings = new Map<string, Record<string, unknown>[] | null>();
  for (const [key, label] of enabled) {
    const [name, market] = key.split("@");
    if (!name || !market) {
      problems.push(
        `${label}: enabledPlugins key ${JSON.stringify(key)} is not name@market; ignored`,
      );
      continue;
    }
    const known = markets.get(market);
    if (!known) {
      problems.push(
        `${label}: ${key}: no market '${market}' in extraKnownMarketplaces; plugin skipped`,
      );
      continue;
    }
    if (!listings.has(market)) listings.set(market, readMarket(known.root, problems));
    const entry = listings.get(market)?.find((plugin) => plugin.name === name);
    if (!entry) {
      if (listings.get(market)) {
        problems.push(
          `${path.join(known.root, MARKETPLACE)}: lists no plugin '${name}'; ${key} skipped`,
        );
      }
      continue;
    }
    const root = insidePath(entry.source, known.root);
    if (typeof root !== "string") {
      problems.push(
        `${path.join(known.root, MARKETPLACE)}: ${name}.source ${root.why} (a folder in the market); plugin skipped`,
      );
      continue;
    }
    found.push({ root, from: label, key });
  }
  return found;
}

/** A market's plugin entries, or null after reporting why they cannot be read. */
function readMarket(root: string, problems: string[]): Record<string, unknown>[] | null {
  const file = path.join(root, MARKETPLACE);
  const read = readJsonState<unknown>(file, (value) =>
    Array.isArray(asObject(value)?.plugins) ? null : 'must be an object with a "plugins" list',
  );
  if (read.status !== "ok") {
    problems.push(read.status === "missing" ? `${file}: no such file` : read.error);
    return null;
  }
  return (asObject(read.value)!.plugins as unknown[]).flatMap((entry) => {
    const object = asObject(entry);
    return object ? [object] : [];
  });
}

// --- Trust ------------------------------------------------------------------------------------

/** What a plugin runs on this machine: its hook commands and its servers, one line each. */
export function whatItRuns(plugin: Plugin): string[] {
  const lines: string[] = [];
  for (const part of plugin.hooks) {
    for (const [event, entries] of Object.entries(asObject(part.value.hooks) ?? {})) {
      for (const entry of Array.isArray(entries) ? entries : []) {
        for (const hook of (asObject(entry)?.hooks as unknown[] | undefined) ?? []) {
          const command = asObject(hook)?.command;
          if (typeof command === "string") lines.push(`hook ${event}: ${command}`);
        }
      }
    }
  }
  for (const part of plugin.mcpServers) {
    for (const [name, raw] of Object.entries(asObject(part.value.mcpServers) ?? {})) {
      const server = asObject(raw) ?? {};
      const how =
        typeof server.url === "string"
          ? server.url
          : [server.command, ...((server.args as unknown[]) ?? [])].join(" ");
      lines.push(`MCP server ${name}: ${how}`);
    }
  }
  return lines;
}

/** The digest a trust answer is kept under: a plugin that comes to run more is asked again. */
function trustDigest(plugin: Plugin): string {
  const runs = JSON.stringify([plugin.root, whatItRuns(plugin)]);
  return createHash("sha256").update(runs).digest("hex").slice(0, 16);
}

export interface LoadOptions {
  argv: string[];
  workdir: string;
  env: Env;
  /** Asks the user; null: there is no terminal to ask on. */
  ask: ((question: string) => Promise<string | null>) | null;
  /** Prints one line (the trust question's listing). */
  say: (text: string) => void;
}

/** Every plugin of this session: `--plugin-dir` ones first, then those the settings enable. */
export async function loadPlugins(options: LoadOptions): Promise<LoadedPlugins> {
  const problems: string[] = [];
  const plugins: Plugin[] = [];
  const add = (plugin: Plugin | null) => {
    if (!plugin) return;
    const kept = plugins.find((other) => other.name === plugin.name);
    if (kept) {
      problems.push(
        `${plugin.root}: plugin '${plugin.name}' is also ${kept.root} (${kept.from}), which wins; skipped`,
      );
      return;
    }
    plugins.push(plugin);
  };
  const base = options.env.INIT_CWD || process.cwd();
  for (const dir of pluginDirArgs(options.argv, base, problems)) {
    add(readPlugin(dir, "--plugin-dir", problems));
  }
  const trustFile = harnessPath(options.workdir, TRUST_FILE);
  const read = readJsonState<Record<string, string>>(trustFile, (value) =>
    asObject(value) ? null : "must be an object of plugin digests",
  );
  // A corrupt file is left as it is: its plugins are asked about again, the answers not kept.
  if (read.status === "corrupt") problems.push(`${read.error}; left as it is, answers not kept`);
  const trusted = read.status === "ok" ? { ...read.value } : {};
  for (const { root, from, key } of enabledPlugins(options.workdir, problems)) {
    const plugin = readPlugin(root, from, problems);
    if (!plugin || plugins.some((other) => other.name === plugin.name)) {
      add(plugin);
      continue;
    }
    const digest = trustDigest(plugin);
    if (trusted[key] === digest) {
      add(plugin);
      continue;
    }
    if (!options.ask) {
      problems.push(
        `${key} (enabled by ${from}) not loaded: a plugin the project enables is asked about before its first load, and there is no terminal to ask on; start a session in a terminal once, or load it with --plugin-dir`,
      );
      continue;
    }
    options.say(`The project enables plugin ${key} (${from}), from ${root}:`);
    options.say(describePlugin(plugin));
    const answer = (await options.ask(`Load ${plugin.name}? [y/N] `))?.trim().toLowerCase();
    if (answer !== "y" && answer !== "yes") {
      problems.push(`${key} not loaded: you declined it (you will be asked again next session)`);
      continue;
    }
    trusted[key] = digest;
    if (read.status !== "corrupt") {
      writeFileAtomic(trustFile, `${JSON.stringify(trusted, null, 2)}\n`);
    }
    add(plugin);
  }
  return { plugins, problems };
}

// --- The mechanism --------------------------------------------------------------------------

/** One plugin's parts, for `/plugin`. */
export function describePlugin(plugin: Plugin): string {
  const list = (names: string[]) => names.join(", ") || "none";
  const named = (file: string) => pluginName(plugin, path.basename(file, ".md"));
  const runs = whatItRuns(plugin);
  return [
    `${plugin.name}${plugin.version ? ` ${plugin.version}` : ""} (${plugin.from}, ${plugin.root})`,
    ...(plugin.description ? [`  ${plugin.description}`] : []),
    `  commands: ${list(plugin.commands.map((file) => `/${named(file)}`))}`,
    `  agents: ${list(plugin.agents.map(named))}`,
    `  skills: ${list(plugin.skills.map((file) => pluginName(plugin, path.basename(path.dirname(file)))))}`,
    ...(runs.length > 0 ? runs.map((line) => `  ${line}`) : ["  runs no hook and no server"]),
  ].join("\n");
}

/**
 * Plugins as a mechanism: their parts are loaded by the mechanisms that load the project's
 * own (each reads `harness.plugins`); this one reports the problems, names the plugins in
 * the banner and lists them with `/plugin`.
 */
export function pluginsMechanism(harness: Pick<Harness, "plugins" | "printer">): Mechanism {
  const { plugins, problems } = harness.plugins;
  return {
    name: "plugins",
    commands: {
      plugin: {
        description: "list the loaded plugins and their parts",
        run: async () => {
          harness.printer.line(
            [
              ...(plugins.length > 0 ? plugins.map(describePlugin) : ["No plugins loaded."]),
              ...problems.map((problem) => `[plugins] ${problem}`),
            ].join("\n"),
          );
          return undefined;
        },
      },
    },
    start: () => [
      ...problems.map((problem) => ({ text: `[plugins] ${problem}`, tone: "warn" as const })),
      ...(plugins.length > 0
        ? [
            {
              text: `[plugins] ${plugins.length} plugin(s): ${plugins.map((p) => `${p.name} (${p.from})`).join(", ")} (/plugin lists their parts)`,
              tone: "dim" as const,
            },
          ]
        : []),
    ],
  };
}
