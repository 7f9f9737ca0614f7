/**
 * Starts a chapter exactly as a learner does: `pnpm --filter sNN start` through the pinned
 * pnpm (never a bare `pnpm`, which a machine may lack), prompts on stdin.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { stripAnsi } from "shared";

export const REPO_ROOT = path.resolve(new URL("../..", import.meta.url).pathname);

const pinned = (
  JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
    packageManager: string;
  }
).packageManager.split("@")[1]!;

/**
 * The pinned pnpm: the one running this test when it is that version, else via npx (whose
 * own start costs about 2 s of CPU, paid by every chapter start).
 */
export function pnpmCommand(): string[] {
  const execpath = process.env.npm_execpath;
  const agent = process.env.npm_config_user_agent ?? "";
  if (agent.startsWith(`pnpm/${pinned} `)) {
    if (execpath && path.basename(execpath).startsWith("pnpm")) {
      return execpath.endsWith(".js") || execpath.endsWith(".cjs")
        ? [process.execPath, execpath]
        : [execpath];
    }
    const running = pnpmAncestor();
    if (running) return [running];
  }
  return ["npx", "-y", `pnpm@${pinned}`];
}

/**
 * pnpm 11 and later is one executable and sets no npm_execpath: the pnpm that started this
 * process is found among its ancestors (Linux /proc; elsewhere the answer is null).
 */
function pnpmAncestor(): string | null {
  for (let pid = process.ppid; pid > 1; pid = parentOf(pid)) {
    try {
      const exe = readlinkSync(`/proc/${pid}/exe`);
      if (path.basename(exe).startsWith("pnpm")) return exe;
    } catch {
      return null;
    }
  }
  return null;
}

/** The parent of `pid` from /proc/<pid>/stat (0 when it cannot be read). */
function parentOf(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return 0;
  }
}

/** This process's environment as a learner's shell would have it, plus `extra`. */
function learnerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  // The test runner's own pnpm and API variables must not leak into the learner's run.
  for (const key of Object.keys(env)) {
    if (/^(ANTHROPIC_|MODEL_ID$|WORKDIR$|INIT_CWD$|FORCE_COLOR$)/.test(key)) delete env[key];
  }
  return Object.assign(env, extra);
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runPnpm(
  args: string[],
  options: {
    input?: string;
    env?: Record<string, string>;
    cwd?: string;
    timeoutMs?: number;
    /**
     * Keeps stdin open after `input` until stdout shows `text`, then either ends stdin (work
     * that comes after the typed lines: s12's scheduled turns; the chapter exits at EOF) or
     * sends a signal to the chapter's own process, the node under pnpm, as a supervisor
     * stopping it would (s11).
     */
    whenShown?: { text: string; action: "end input" | NodeJS.Signals };
  },
): Promise<CliRun> {
  const [command, ...prefix] = pnpmCommand();
  const env = learnerEnv(options.env);
  return new Promise((resolve, reject) => {
    const child = spawn(command!, [...prefix, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let acted = false;
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const when = options.whenShown;
      if (!when || acted || !child.pid || !stripAnsi(stdout).includes(when.text)) return;
      acted = true;
      if (when.action === "end input") {
        child.stdin.end();
        return;
      }
      // pnpm runs the script through a shell; the chapter is the node process below it.
      const chapter = descendants(child.pid).find((pid) =>
        /^\S*node .*main\.ts/.test(commandLine(pid)),
      );
      if (chapter === undefined) reject(new Error("whenShown: no chapter process under pnpm"));
      else process.kill(chapter, when.action);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stripAnsi(stdout), stderr: stripAnsi(stderr) });
    });
    if (options.whenShown) child.stdin.write(options.input ?? "");
    else child.stdin.end(options.input ?? "");
  });
}

/** Every process below `root` (Linux /proc), children before grandchildren. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const parent = parentOf(entry);
    if (parent > 0) parents.set(Number(entry), parent);
  }
  const found: number[] = [];
  for (let queue = [root]; queue.length > 0; ) {
    const pid = queue.shift()!;
    for (const [child, parent] of parents) {
      if (parent !== pid) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/**
 * Runs `pnpm <args>` in a pseudo-terminal (util-linux `script`), as a learner at a terminal
 * does: stdin is a TTY, so Ctrl-C reaches the chapter as a key. `steps` are sent in order,
 * each once the output shows its `after` text (the first at once): a line is typed with
 * Enter, `"\x03"` is Ctrl-C. Resolves with the exit status and the output, ANSI stripped.
 */
export function runPnpmInTerminal(
  args: string[],
  steps: Array<{ after?: string; send: string }>,
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliRun> {
  const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
  const command = [...pnpmCommand(), ...args].map(quote).join(" ");
  const env = learnerEnv({ TERM: "dumb", ...options.env });
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: REPO_ROOT,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    let next = 0;
    let seenUpTo = 0;
    const advance = () => {
      while (next < steps.length) {
        const step = steps[next]!;
        const shown = stripAnsi(output);
        if (step.after !== undefined) {
          const at = shown.indexOf(step.after, seenUpTo);
          if (at < 0) return;
          seenUpTo = at + step.after.length;
        }
        child.stdin.write(step.send);
        next++;
      }
    };
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      advance();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stripAnsi(output), stderr: "" });
    });
    advance();
  });
}
