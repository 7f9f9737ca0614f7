/**
 * The offline demo runner: a chapter's scripted session runs through the real
 * `main`, the real loop and tools and the real SDK client, pointed at the local fake
 * Messages API, in a fresh temporary workspace that is kept afterwards for reading.
 */
import { mkdtempSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import type { Env } from "./config.ts";
import { startFakeServer } from "./fake-server.ts";
import type { Main, MainIO } from "./io.ts";
import { type MessageRequest, ScriptedModel, type ScriptStep } from "./scripted.ts";
import { colorEnabled, createStyle, type Style, stripAnsi } from "./style.ts";

/** A script step that can also show what the model was sent (where that is the lesson). */
export interface DemoStep extends ScriptStep {
  /**
   * What to show of the request this step answers: printed when the request arrives, so
   * it sits on screen between what the harness printed before the call and the reply.
   */
  sent?: (request: MessageRequest) => { title: string; text: string };
}

export interface DemoOptions {
  /** Chapter id, e.g. "s01". */
  chapter: string;
  /** One sentence: what this demo shows. */
  shows: string;
  /** Lines "typed" into the REPL, in order. */
  prompts: string[];
  /** Further sessions in the same workspace, each a fresh start of the harness (s09 memory). */
  moreSessions?: string[][];
  script: DemoStep[];
  main: Main;
  /** Prepares the temporary workspace (sample files, settings). */
  setup?: (workdir: string) => void;
  /** Extra variables for the chapter (short timeouts, limits); the demo prints them. */
  env?: Env;
  /**
   * Keeps each session's input open after its prompts until the output shows this text
   * (at most HOLD_INPUT_LIMIT_MS), for work that arrives later than typed lines (s12's
   * scheduled turns); then the input ends as usual. Without it the input ends after the
   * last prompt, and the REPL stops there.
   */
  holdInputUntil?: string;
  /** True when `start` fell back to the demo because nothing is configured. */
  noCredentials?: boolean;
}

const DROPPED = /^(ANTHROPIC_|MODEL_ID$|WORKDIR$|INIT_CWD$)/;
/** The longest a held input waits for its text (a script that went wrong still ends). */
export const HOLD_INPUT_LIMIT_MS = 15_000;

export async function runDemo(io: Pick<MainIO, "stdout" | "env">, demo: DemoOptions) {
  const style = createStyle(colorEnabled(io.stdout, io.env));
  const say = (text: string) => io.stdout.write(`${text}\n`);
  const workdir = realpathSync(
    mkdtempSync(path.join(os.tmpdir(), `harness-demo-${demo.chapter}-`)),
  );
  demo.setup?.(workdir);
  const model = new ScriptedModel(demo.script.map((step) => showingSent(step, say, style)));
  const server = await startFakeServer({ model });

  if (demo.noCredentials) {
    say(style.yellow("No model configured: running this chapter's offline demo."));
    say(
      style.dim(
        "To use a real model, put ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or ANTHROPIC_BASE_URL\n" +
          "for an Anthropic-compatible endpoint) in .env at the repository root; see .env.example.",
      ),
    );
  }
  say(style.bold(`Offline demo (${demo.chapter}): ${demo.shows}`));
  say(style.dim(`A scripted model answers from ${server.url}; workspace: ${workdir}`));
  const settings = Object.entries(demo.env ?? {});
  if (settings.length > 0) {
    say(style.dim(`It runs with: ${settings.map(([key, value]) => `${key}=${value}`).join(" ")}`));
  }
  say("");

  const env: Env = {};
  for (const [key, value] of Object.entries(io.env)) if (!DROPPED.test(key)) env[key] = value;
  Object.assign(env, demo.env, {
    ANTHROPIC_BASE_URL: server.url,
    ANTHROPIC_API_KEY: "offline-demo-key",
    WORKDIR: workdir,
  });

  try {
    let code = 0;
    for (const [i, prompts] of [demo.prompts, ...(demo.moreSessions ?? [])].entries()) {
      if (i > 0)
        say(style.bold("\n--- the harness restarts: a new session in the same workspace ---\n"));
      const lines = prompts.map((line) => `${line}\n`);
      const held = demo.holdInputUntil ? holdInput(lines, io.stdout, demo.holdInputUntil) : null;
      const stdin = held?.stdin ?? Readable.from(lines);
      try {
        code = await demo.main({ argv: [], stdin, stdout: held?.stdout ?? io.stdout, env });
      } finally {
        held?.release();
      }
      if (code !== 0) break;
    }
    say("");
    say(style.dim(`Demo finished. Its workspace is kept at ${workdir}`));
    say(style.dim(`(read .harness/logs/ there to see every request the model was sent).`));
    return code;
  } finally {
    await server.close();
  }
}

/**
 * An input that stays open after `lines` until `text` appears in what is written to the
 * returned stdout (which passes everything on to `out`). Its timer also keeps Node running
 * while the chapter waits on unref'd timers of its own.
 */
function holdInput(lines: string[], out: MainIO["stdout"], text: string) {
  const stdin = new PassThrough();
  for (const line of lines) stdin.write(line);
  const end = () => {
    clearTimeout(timer);
    if (!stdin.writableEnded) stdin.end();
  };
  const timer = setTimeout(end, HOLD_INPUT_LIMIT_MS);
  let seen = "";
  const stdout = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      out.write(chunk);
      // The text may arrive split over writes: keep a tail as long as the text.
      seen = (seen + stripAnsi(chunk.toString())).slice(-(text.length + 4096));
      if (seen.includes(text)) end();
      done();
    },
  }) as Writable & { isTTY?: boolean };
  stdout.isTTY = out.isTTY;
  return { stdin, stdout, release: end };
}

/** The step as the scripted model runs it: its reply, preceded by what it was sent. */
function showingSent(step: DemoStep, say: (text: string) => void, style: Style): ScriptStep {
  const { sent, ...rest } = step;
  if (sent === undefined) return rest;
  return {
    ...rest,
    reply: (request) => {
      const { title, text } = sent(request);
      say(style.cyan(`[sent to the model] ${title}`));
      for (const line of text.split("\n")) say(style.dim(`  | ${line}`));
      return typeof step.reply === "function" ? step.reply(request) : step.reply;
    },
  };
}
