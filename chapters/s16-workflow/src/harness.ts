/**
 * The harness: configuration, the shared services every mechanism may use, and the session
 * that joins an ordered list of mechanisms (contract.ts) into one REPL.
 *
 *   main.ts ──> runHarness(io, chapter, list)
 *                 config (a bad value ends here with status 1)
 *                 services: printer, session log, usage meter, model client
 *                 no model configured? the chapter's offline demo instead
 *                 the line reader; the plugins (plugins.ts), which may ask first
 *                 the list of mechanisms, each made by its factory
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
  type ToolDefinition,
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
import { type LoadedPlugins, loadPlugins } from "./plugins.ts";
import { joinParts, type SystemParts, systemParts, systemPrompt } from "./prompt.ts";
import { runRepl } from "./repl.ts";

export interface Chapter {
  id: string;
  title: string;
}

/** What one agent gets from the mechanisms for one run of the loop. */
export interface AgentSetup {
  tools: ToolMap;
  system: string;
  /** The same prompt in its stable and dynamic parts. */
  parts: SystemParts;
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
  /** The plugins of this session (plugins.ts), read before the mechanisms are made. */
  plugins: LoadedPlugins;
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
  if (config.offline) {
    // Loaded only now: a normal run never pays for the fake server and the script.
    const [{ runDemo }, { DEMO }] = await Promise.all([
      import("shared/testing"),
      import("./demo.ts"),
    ]);
    return runDemo(io, { ...DEMO, main, noCredentials: true });
  }
  const lines = new LineReader({ input: io.stdin, output: io.stdout, printer: harness.printer });
  reader = lines;
  io.onSignal?.(() => lines.interrupt());
  // A plugin the project enables may ask before it loads; the mechanisms load their parts.
  harness.plugins = await loadPlugins({
    argv: io.argv,
    workdir: config.workdir,
    env: io.env,
    ask: lines.isTTY ? (question) => lines.ask(question) : null,
    say: (text) => harness.printer.line(text),
  });
  let mechanisms: Mechanism[];
  try {
    mechanisms = list(harness);
  } catch (error) {
    lines.close();
    return fail(error);
  }
  harness.wrapClient((base) =>
    mechanisms.reduce((client, mechanism) => mechanism.extendClient?.(client) ?? client, base),
  );
  harness.agent = (role, scope) => {
    const parts = systemParts(config.workdir, mechanisms, role);
    return {
      tools: toolMap(gatherTools(mechanisms, role)),
      system: joinParts(parts),
      parts,
      seams: mechanisms.flatMap((mechanism) => mechanism.loop?.({ role, scope }) ?? []),
    };
  };

  const mainTools = toolPool(mechanisms, "main");
  try {
    showBanner(harness, mechanisms);
    return await runRepl({
      prompt: `${chapter.id} >> `,
      reader: lines,
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
          // Both asked for again before every model call: a server connected during the turn
          // adds tools, and the dynamic sections (memory, the clock) may change.
          tools: mainTools,
          system: () => systemParts(config.workdir, mechanisms, "main"),
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
    lines.close();
  }
}

/**
 * An agent's tools, asked for before every model call: the same map while every mechanism
 * gives the same tools (an `extendTool` depends on the tool and the role alone), a new one
 * when a mechanism gives others (a server connected or gone).
 */
function toolPool(mechanisms: Mechanism[], role: Role): () => ToolMap {
  let given: ToolDefinition[] = [];
  let pool: ToolMap = new Map();
  return () => {
    const now = mechanisms.flatMap((mechanism) => mechanism.tools?.(role) ?? []);
    if (now.length !== given.length || now.some((tool, i) => tool !== given[i])) {
      given = now;
      pool = toolMap(gatherTools(mechanisms, role));
    }
    return pool;
  };
}

function createServices(
  io: MainIO,
  chapter: Chapter,
  config: Config,
  reader: () => LineReader,
): Harness & { wrapClient(wrap: (base: ModelClient) => ModelClient): void } {
  const printer = createPrinter(io.stdout, colorEnabled(io.stdout, io.env));
  const log = createSessionLog({
    workdir: config.workdir,
    secrets: [config.apiKey, config.authToken],
  });
  const usage = new UsageMeter();
  const toTranscript = transcriptSink(log);
  // The SDK is loaded on the first model call, so the prompt appears without waiting for it.
  const base = createModelClient({
    anthropic: () => createAnthropic(config),
    log,
    usage,
    observer: io.observer,
  });
  // Stable for the whole session: mechanisms keep it, and each call goes to the client
  // their `extendClient` wrappers made of `base` (runHarness wraps it once the list is made).
  let composed = base;
  const client: ModelClient = {
    create: (params, options) => composed.create(params, options),
    stream: async (params, options) => {
      if (composed.stream) return composed.stream(params, options);
      // A wrapper that cannot stream: the answer comes whole, handed over in one piece.
      const message = await composed.create(params, options);
      const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : []));
      if (text.length > 0) options?.onText?.(text.join(""));
      return message;
    },
  };
  return {
    chapter,
    config,
    env: io.env,
    workdir: config.workdir,
    model: config.model,
    client,
    wrapClient(wrap) {
      composed = wrap(base);
    },
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
    plugins: { plugins: [], problems: [] },
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
