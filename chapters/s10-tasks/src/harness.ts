/**
 * The harness: configuration, the shared services every mechanism may use, and the session
 * that joins an ordered list of mechanisms (contract.ts) into one REPL.
 *
 *   main.ts ──> runHarness(io, chapter, list)
 *                 config (a bad value ends here with status 1)
 *                 services: printer, session log, usage meter, model client
 *                 the list of mechanisms, each made by its factory
 *                 no model configured? the chapter's offline demo instead
 *                 banner, then the REPL: each turn runs agentLoop with
 *                   tools, prompt and seams gathered from the list
 *                 close every mechanism
 *
 * Nothing here is specific to one mechanism.
 */
import {
  type Config,
  ConfigError,
  colorEnabled,
  createAnthropic,
  createModelClient,
  createPrinter,
  createSessionLog,
  type Env,
  type EventSink,
  LineReader,
  loadConfig,
  type Main,
  type MainIO,
  type ModelClient,
  type Printer,
  type SessionLog,
  type ToolMap,
  toolMap,
  transcriptSink,
  UsageMeter,
} from "shared";
import {
  closeAll,
  commandsOf,
  gatherTools,
  type LoopSeams,
  type Mechanism,
  type Role,
} from "./contract.ts";
import { agentLoop } from "./loop.ts";
import { systemPrompt } from "./prompt.ts";
import { runRepl } from "./repl.ts";

export interface Chapter {
  id: string;
  title: string;
}

/** What one agent gets from the mechanisms for one run of the loop. */
export interface AgentSetup {
  tools: ToolMap;
  system: string;
  seams: LoopSeams[];
}

/** The services mechanisms share. Factories receive it; most use it only when called later. */
export interface Harness {
  chapter: Chapter;
  config: Config;
  env: Env;
  workdir: string;
  model: string;
  client: ModelClient;
  log: SessionLog;
  usage: UsageMeter;
  printer: Printer;
  /** Where loop events go: the terminal, the transcript, the benchmark's observer. */
  emit: EventSink;
  /** The one line reader (approvals ask on it); there once the session has started. */
  readonly reader: LineReader;
  /** Tools, system prompt and seams of one loop run of an agent of `role`. */
  agent(role: Role, scope: string): AgentSetup;
}

export async function runHarness(
  io: MainIO,
  chapter: Chapter,
  main: Main,
  list: (harness: Harness) => Mechanism[],
): Promise<number> {
  const errors = io.stderr ?? io.stdout;
  const fail = (error: unknown) => {
    if (!(error instanceof ConfigError)) throw error;
    errors.write(`${chapter.id}: configuration error: ${error.message}\n`);
    return 1;
  };
  let config: Config;
  try {
    config = loadConfig(io.env);
  } catch (error) {
    return fail(error);
  }
  let reader: LineReader | null = null;
  const harness = createServices(io, chapter, config, () => {
    if (!reader) throw new Error("the line reader exists once the session has started");
    return reader;
  });
  let mechanisms: Mechanism[];
  try {
    mechanisms = list(harness);
  } catch (error) {
    return fail(error);
  }
  harness.agent = (role, scope) => ({
    tools: toolMap(gatherTools(mechanisms, role)),
    system: systemPrompt(config.workdir, mechanisms, role),
    seams: mechanisms.flatMap((mechanism) => mechanism.loop?.({ role, scope }) ?? []),
  });
  if (config.offline) {
    // Loaded only now: a normal run never pays for the fake server and the script.
    const [{ runDemo }, { DEMO }] = await Promise.all([
      import("shared/testing"),
      import("./demo.ts"),
    ]);
    return runDemo(io, { ...DEMO, main, noCredentials: true });
  }

  reader = new LineReader({ input: io.stdin, output: io.stdout, printer: harness.printer });
  io.onSignal?.(() => reader?.interrupt());
  try {
    showBanner(harness, mechanisms);
    return await runRepl({
      prompt: `${chapter.id} >> `,
      reader,
      printer: harness.printer,
      usage: harness.usage,
      log: harness.log,
      model: config.model,
      history: [],
      commands: commandsOf(mechanisms, (name, file) =>
        harness.printer.line(
          `[commands] ${file}: /${name} is a command of this harness; the file is not used`,
          "warn",
        ),
      ),
      hooks: mechanisms.flatMap((mechanism) => mechanism.turn ?? []),
      sources: mechanisms.flatMap((mechanism) => mechanism.sources ?? []),
      runTurn: (turn) => {
        const setup = harness.agent("main", "main");
        return agentLoop(turn.history, {
          client: harness.client,
          model: config.model,
          tools: setup.tools,
          system: setup.system,
          scope: "main",
          role: "main",
          turn: turn.kind,
          request: turn.request,
          workdir: config.workdir,
          signal: turn.signal,
          emit: harness.emit,
          seams: setup.seams,
        });
      },
    });
  } finally {
    await closeAll(mechanisms, (name, error) => {
      const why = error instanceof Error ? error.message : String(error);
      harness.printer.line(`[${name}] could not close: ${why}`, "error");
      harness.log.record("close", { mechanism: name, error: why });
    });
    reader.close();
  }
}

function createServices(
  io: MainIO,
  chapter: Chapter,
  config: Config,
  reader: () => LineReader,
): Harness {
  const printer = createPrinter(io.stdout, colorEnabled(io.stdout, io.env));
  const log = createSessionLog({
    workdir: config.workdir,
    secrets: [config.apiKey, config.authToken],
  });
  const usage = new UsageMeter();
  const toTranscript = transcriptSink(log);
  // The SDK is loaded on the first model call, so the prompt appears without waiting for it.
  const client = createModelClient({
    anthropic: () => createAnthropic(config),
    log,
    usage,
    observer: io.observer,
  });
  return {
    chapter,
    config,
    env: io.env,
    workdir: config.workdir,
    model: config.model,
    client,
    log,
    usage,
    printer,
    emit: (event) => {
      printer.event(event);
      toTranscript(event);
      io.observer?.event?.(event);
    },
    get reader() {
      return reader();
    },
    agent: () => {
      throw new Error("agent() is ready once the mechanisms are made");
    },
  };
}

function showBanner(harness: Harness, mechanisms: Mechanism[]): void {
  const { printer, config, chapter } = harness;
  harness.log.record("config", {
    chapter: chapter.id,
    model: config.model,
    workdir: config.workdir,
    system: systemPrompt(config.workdir, mechanisms, "main"),
  });
  printer.line(printer.style.bold(`${chapter.id}: ${chapter.title}`));
  printer.line(`Workspace: ${config.workdir} - model: ${config.model}`, "dim");
  for (const notice of config.notices) printer.line(notice, "warn");
  for (const mechanism of mechanisms) {
    for (const line of mechanism.start?.() ?? []) printer.line(line.text, line.tone);
  }
  printer.line("Type a request and press Enter. Type q (or quit, exit) to leave.");
  printer.line();
}
