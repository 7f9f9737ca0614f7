/**
 * Claude Code-compatible project settings.
 *
 * Reads `<WORKDIR>/.claude/settings.json` and then `.claude/settings.local.json` once at
 * start. A file that is missing is simply absent; one that cannot be read or is not a JSON
 * object is reported with its path and contributes nothing, and the harness runs on. The
 * raw `permissions`, `hooks`, `enabledPlugins` and `extraKnownMarketplaces` sections are
 * returned as found: their readers check them. Nothing here ever writes them.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

export const SETTINGS_FILES = [".claude/settings.json", ".claude/settings.local.json"];

export interface SettingsFile {
  /** As the user knows it, e.g. `.claude/settings.json`. */
  label: string;
  path: string;
  /** The raw sections; checked by their readers. */
  permissions: unknown;
  hooks: unknown;
  /** The plugins the project turns on (`{"name@market": true}`), and where markets are. */
  enabledPlugins?: unknown;
  extraKnownMarketplaces?: unknown;
}

export interface LoadedSettings {
  /** The files that were read, in load order. */
  files: SettingsFile[];
  /** One line per file that could not be used. */
  problems: string[];
}

export function loadSettings(workdir: string): LoadedSettings {
  const loaded: LoadedSettings = { files: [], problems: [] };
  for (const label of SETTINGS_FILES) {
    const file = path.join(workdir, label);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      loaded.problems.push(`${file}: cannot be read (${(error as Error).message}); ignored`);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      loaded.problems.push(`${file}: invalid JSON (${(error as Error).message}); ignored`);
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      loaded.problems.push(`${file}: must be a JSON object; ignored`);
      continue;
    }
    const record = value as Record<string, unknown>;
    loaded.files.push({
      label,
      path: file,
      permissions: record.permissions,
      hooks: record.hooks,
      enabledPlugins: record.enabledPlugins,
      extraKnownMarketplaces: record.extraKnownMarketplaces,
    });
  }
  return loaded;
}
