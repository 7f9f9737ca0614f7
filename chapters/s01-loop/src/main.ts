/**
 * s01: Agent Loop — the whole harness is one loop and one tool.
 *
 *   user line ──> messages ──> model ──> reply
 *                    ^                    │ tool_use?
 *                    │   yes              v
 *                    └── tool_result <── bash(command)
 *                        no: print the reply's text, wait for the next line
 *
 * Run it:  pnpm --filter s01 start    (no key configured: the offline demo runs)
 *          pnpm --filter s01 demo
 * New here: everything — the loop (loop.ts), bash (bash.ts), the block list (guard.ts),
 * the system prompt (prompt.ts) and the REPL (repl.ts). `shared` supplies configuration,
 * the client, the line reader, printing and the session log.
 */
import {
  ConfigError,
  colorEnabled,
  createAnthropic,
  createModelClient,
  createPrinter,
  createSessionLog,
  LineReader,
  loadConfig,
  type MainIO,
  positiveIntVar,
  runDemo,
  runIfEntry,
  toolMap,
  transcriptSink,
  UsageMeter,
} from "shared";
import { BASH_TIMEOUT_MS, bashTool } from "./bash.ts";
import { DEMO } from "./demo.ts";
import { guard } from "./guard.ts";
import { agentLoop } from "./loop.ts";
import { buildSystemPrompt, mainSections } from "./prompt.ts";
import { runRepl } from "./repl.ts";

export const CHAPTER = { id: "s01", title: "Agent Loop" };

export async function main(io: MainIO): Promise<number> {
  const errors = io.stderr ?? io.stdout;
  let config: ReturnType<typeof loadConfig>;
  let timeoutMs: number;
  try {
    config = loadConfig(io.env);
    timeoutMs = positiveIntVar(io.env, "BASH_TIMEOUT_MS", BASH_TIMEOUT_MS);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    errors.write(`${CHAPTER.id}: configuration error: ${error.message}\n`);
    return 1;
  }
  if (config.offline) return runDemo(io, { ...DEMO, main, noCredentials: true });

  const printer = createPrinter(io.stdout, colorEnabled(io.stdout, io.env));
  const log = createSessionLog({
    workdir: config.workdir,
    secrets: [config.apiKey, config.authToken],
  });
  const usage = new UsageMeter();
  const client = createModelClient({
    anthropic: createAnthropic(config),
    log,
    usage,
    observer: io.observer,
  });
  const tools = toolMap([bashTool({ timeoutMs })]);
  const system = buildSystemPrompt(mainSections(config.workdir));
  const reader = new LineReader({ input: io.stdin, output: io.stdout, printer });
  io.onSignal?.(() => reader.interrupt());
  const showAndLog = transcriptSink(log);

  printer.line(printer.style.bold(`${CHAPTER.id}: ${CHAPTER.title}`));
  printer.line(`Workspace: ${config.workdir} - model: ${config.model}`, "dim");
  for (const notice of config.notices) printer.line(notice, "warn");
  printer.line("Type a request and press Enter. Type q (or quit, exit) to leave.");
  printer.line();
  log.record("config", {
    chapter: CHAPTER.id,
    model: config.model,
    workdir: config.workdir,
    system,
  });

  try {
    return await runRepl({
      prompt: `${CHAPTER.id} >> `,
      reader,
      printer,
      usage,
      log,
      model: config.model,
      history: [],
      runTurn: (history, signal) =>
        agentLoop(history, {
          client,
          model: config.model,
          tools,
          system,
          scope: "main",
          workdir: config.workdir,
          signal,
          emit: (event) => {
            printer.event(event);
            showAndLog(event);
            io.observer?.event?.(event);
          },
          seams: { beforeToolCall: guard },
        }),
    });
  } finally {
    reader.close();
  }
}

runIfEntry(import.meta.url, main);
