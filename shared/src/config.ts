/**
 * Configuration, read once at start-up.
 *
 * `loadDotenv` merges the repository's `.env` under the real environment (real variables
 * win). `loadConfig` turns an environment into a checked `Config`, or throws a
 * `ConfigError` whose message is the one line the user sees before the process exits 1.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseDotenv } from "dotenv";

export const DEFAULT_MODEL_ID = "claude-sonnet-4-6";
const DEFAULT_BASE_URL = "https://api.anthropic.com";
/** Sent when a base URL is configured without credentials (a local compatible server). */
export const PLACEHOLDER_API_KEY = "not-needed";

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface Config {
  /** Exactly one of apiKey / authToken is non-null whenever `offline` is false. */
  apiKey: string | null;
  authToken: string | null;
  baseURL: string;
  model: string;
  workdir: string;
  /** No key, no token, no base URL: the chapter runs its offline demo instead. */
  offline: boolean;
  /** One-time remarks to print at start (e.g. which credential wins). */
  notices: string[];
}

/** Returns `env` with the variables of `dotenvPath` added where `env` lacks them. */
export function loadDotenv(env: Env, dotenvPath: string): Env {
  if (!existsSync(dotenvPath)) return { ...env };
  const fromFile = parseDotenv(readFileSync(dotenvPath));
  const merged: Env = { ...fromFile };
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}

/** Reads a variable, treating empty and whitespace-only values as unset. */
export function readVar(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * A chapter's numeric override (`BASH_TIMEOUT_MS`, limits, test clocks): the default when
 * unset, a ConfigError naming the variable when it is not a positive integer.
 */
export function positiveIntVar(env: Env, name: string, fallback: number): number {
  const raw = readVar(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(`${name} must be a positive integer (got '${raw}')`);
  }
  return Number(raw);
}

export function loadConfig(env: Env, cwd: string = process.cwd()): Config {
  const notices: string[] = [];
  let apiKey = readVar(env, "ANTHROPIC_API_KEY") ?? null;
  let authToken = readVar(env, "ANTHROPIC_AUTH_TOKEN") ?? null;
  const rawBaseURL = readVar(env, "ANTHROPIC_BASE_URL");

  if (apiKey && authToken) {
    notices.push(
      "Both ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are set; using ANTHROPIC_API_KEY.",
    );
    authToken = null;
  }
  const offline = !apiKey && !authToken && !rawBaseURL;
  if (!offline && !apiKey && !authToken) apiKey = PLACEHOLDER_API_KEY;

  return {
    apiKey,
    authToken,
    baseURL: rawBaseURL ? checkBaseURL(rawBaseURL) : DEFAULT_BASE_URL,
    model: readVar(env, "MODEL_ID") ?? DEFAULT_MODEL_ID,
    workdir: resolveWorkdir(env, cwd),
    offline,
    notices,
  };
}

function checkBaseURL(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`ANTHROPIC_BASE_URL is not a valid URL: '${raw}'`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`ANTHROPIC_BASE_URL must start with http:// or https:// (got '${raw}')`);
  }
  return raw.replace(/\/+$/, "");
}

/** WORKDIR, else the directory the user ran pnpm from (INIT_CWD), else the process cwd. */
function resolveWorkdir(env: Env, cwd: string): string {
  const given = readVar(env, "WORKDIR");
  const base = readVar(env, "INIT_CWD") ?? cwd;
  const dir = given ? path.resolve(base, given) : path.resolve(base);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    throw new ConfigError(`WORKDIR does not exist: ${dir}`);
  }
  if (!isDir) throw new ConfigError(`WORKDIR is not a directory: ${dir}`);
  return dir;
}
