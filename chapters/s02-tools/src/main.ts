/**
 * s02: Tool Use — four file tools join bash, and the loop finds each by name.
 *
 *   reply: tool_use { name, input } ──> tools.get(name) ──┬─ bash        bash.ts
 *                                       (own-key Map)     ├─ read_file   tools.ts
 *                                                         ├─ write_file  tools.ts
 *                                                         ├─ edit_file   tools.ts
 *                                                         ├─ glob        tools.ts
 *                                                         └─ (missing) ─> "Error: Unknown tool …"
 *   each call: parse(input) ─> guard (block list; paths must stay in WORKDIR) ─> run
 *
 * Run it:  pnpm --filter s02 start    (no key configured: the offline demo runs)
 *          pnpm --filter s02 demo
 * New here: tools.ts (read_file, write_file, edit_file, glob and the ordered tool list).
 * Changed from s01: guard.ts also refuses file paths that leave the workspace (real paths,
 * so `..`, absolute paths and symlinks are caught); prompt.ts adds the Files section; this
 * file builds the tool map from `baseTools`. The loop is unchanged: it already dispatched
 * through the map, so a new tool is one more entry in the list.
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
import { BASH_TIMEOUT_MS } from "./bash.ts";
import { DEMO } from "./demo.ts";
import { guard } from "./guard.ts";
import { agentLoop } from "./loop.ts";
import { buildSystemPrompt, mainSections } from "./prompt.ts";
import { runRepl } from "./repl.ts";
import { baseTools } from "./tools.ts";

export const CHAPTER = { id: "s02", title: "Tool Use" };

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
  const tools = toolMap(baseTools({ timeoutMs }));
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
