/**
 * What a chapter's `main` is given: the process's streams and environment,
 * or test doubles. Nothing in a chapter reads `process.stdin`/`process.env` directly, so
 * tests drive the real REPL in-process.
 */
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { type Env, loadDotenv } from "./config.ts";
import type { Observer } from "./events.ts";

export interface MainIO {
  argv: string[];
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable & { isTTY?: boolean };
  /** Defaults to stdout. */
  stderr?: Writable & { isTTY?: boolean };
  env: Env;
  /** Instrumentation for the benchmark; absent in normal runs. */
  observer?: Observer;
  /**
   * Set by `runIfEntry`: Ctrl-C (SIGINT) and SIGTERM delivered as signals (piped stdin has
   * no readline SIGINT).
   */
  onSignal?: (handler: () => void) => void;
}

export type Main = (io: MainIO) => Promise<number>;

/** True when `moduleUrl` is the file Node was started with (Node 20 has no import.meta.main). */
export function isEntry(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/** The repository root: the nearest folder above `from` holding pnpm-workspace.yaml. */
export function findRepoRoot(from: string): string | null {
  let dir = from;
  for (;;) {
    if (existsSync(path.join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * Runs `main` with the real process when `moduleUrl` is the entry file: the repository's
 * `.env` is merged under the real environment (real variables win), and the exit status
 * is main's.
 */
export function runIfEntry(moduleUrl: string, main: Main): void {
  if (!isEntry(moduleUrl)) return;
  const root = findRepoRoot(path.dirname(fileURLToPath(moduleUrl)));
  const env = root ? loadDotenv(process.env, path.join(root, ".env")) : { ...process.env };
  main({
    argv: process.argv.slice(2),
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env,
    // SIGTERM ends the session like Ctrl-C, so mechanisms close and no child outlives it.
    onSignal: (handler) => {
      process.on("SIGINT", handler);
      process.on("SIGTERM", handler);
    },
  }).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`fatal: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
