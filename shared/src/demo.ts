/**
 * The offline demo runner: a chapter's scripted session runs through the real
 * `main`, the real loop and tools and the real SDK client, pointed at the local fake
 * Messages API, in a fresh temporary workspace that is kept afterwards for reading.
 */
import { mkdtempSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import type { Env } from "./config.ts";
import { startFakeServer } from "./fake-server.ts";
import type { Main, MainIO } from "./io.ts";
import { type MessageRequest, ScriptedModel, type ScriptStep } from "./scripted.ts";
import { colorEnabled, createStyle, type Style } from "./style.ts";

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
  /** True when `start` fell back to the demo because nothing is configured. */
  noCredentials?: boolean;
}

const DROPPED = /^(ANTHROPIC_|MODEL_ID$|WORKDIR$|INIT_CWD$)/;

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
      const stdin = Readable.from(prompts.map((line) => `${line}\n`));
      code = await demo.main({ argv: [], stdin, stdout: io.stdout, env });
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
