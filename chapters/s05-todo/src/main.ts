/**
 * s05: TodoWrite — the model writes its plan down, and the harness keeps it in view.
 *
 *   model ──> todo_write([{content, status}, …]) ──> the list is replaced ──> shown + returned
 *     │
 *     └── 3 tool rounds in a row without todo_write?
 *           └── the next results message ends with  <reminder>Update your todos.</reminder>
 *               (after every tool_result block, in the same user message)
 *
 * Run it:  pnpm --filter s05 start    (no key configured: the offline demo runs)
 *          pnpm --filter s05 demo
 * New here: todo.ts (the list, the todo_write tool, the reminder). The loop is unchanged:
 * the reminder plugs into its afterResults seam; this file adds the tool to the map.
 */
import {
  ConfigError,
  colorEnabled,
  createAnthropic,
  createModelClient,
  createPrinter,
  createSessionLog,
  type EventSink,
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
import {
  contextInjectHook,
  HookBus,
  largeOutputHook,
  logHook,
  parseCommandHooks,
  permissionHook,
  summaryHook,
} from "./hooks.ts";
import { agentLoop } from "./loop.ts";
import { createPermissionGate, parseRules } from "./permissions.ts";
import { buildSystemPrompt, mainSections } from "./prompt.ts";
import { runRepl } from "./repl.ts";
import { loadSettings } from "./settings.ts";
import { TodoManager, todoReminder, todoWriteTool } from "./todo.ts";
import { baseTools } from "./tools.ts";

export const CHAPTER = { id: "s05", title: "TodoWrite" };

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
  const system = buildSystemPrompt(mainSections(config.workdir));
  const reader = new LineReader({ input: io.stdin, output: io.stdout, printer });
  io.onSignal?.(() => reader.interrupt());
  const showAndLog = transcriptSink(log);
  const emit: EventSink = (event) => {
    printer.event(event);
    showAndLog(event);
    io.observer?.event?.(event);
  };
  const todos = { manager: new TodoManager(), emit, log };
  const tools = toolMap([...baseTools({ timeoutMs }), todoWriteTool(todos)]);
  const settings = loadSettings(config.workdir);
  const { rules, problems } = parseRules(settings.files);
  const permissionGate = createPermissionGate({
    workdir: config.workdir,
    rules,
    tools,
    reader,
    emit,
    log,
  });
  const hooks = new HookBus({ workdir: config.workdir, tools, emit, log, env: io.env });
  hooks.register("UserPromptSubmit", "contextInjectHook", contextInjectHook);
  hooks.register("PreToolUse", "permissionHook", permissionHook(permissionGate));
  hooks.register("PreToolUse", "logHook", logHook);
  hooks.register("PostToolUse", "largeOutputHook", largeOutputHook);
  hooks.register("Stop", "summaryHook", summaryHook);
  const commandHooks = parseCommandHooks(settings.files);
  hooks.addCommandHooks(commandHooks.hooks);

  printer.line(printer.style.bold(`${CHAPTER.id}: ${CHAPTER.title}`));
  printer.line(`Workspace: ${config.workdir} - model: ${config.model}`, "dim");
  for (const notice of config.notices) printer.line(notice, "warn");
  for (const problem of [...settings.problems, ...problems, ...commandHooks.problems])
    printer.line(`[settings] ${problem}`, "warn");
  for (const file of settings.files) {
    const count = (kind: string) => rules.filter((r) => r.file === file.label && r.kind === kind);
    const summary = ["allow", "deny", "ask"].map((kind) => `${count(kind).length} ${kind}`);
    printer.line(`[permissions] ${file.label}: ${summary.join(", ")} rules`, "dim");
  }
  for (const line of hooks.describeCommandHooks()) printer.line(line, "warn");
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
      prepareLine: (line) => hooks.userPromptSubmit(line),
      runTurn: (history, signal) =>
        agentLoop(history, {
          client,
          model: config.model,
          tools,
          system,
          scope: "main",
          workdir: config.workdir,
          signal,
          emit,
          seams: { ...hooks.loopSeams("main"), ...todoReminder(todos) },
        }),
    });
  } finally {
    reader.close();
  }
}

runIfEntry(import.meta.url, main);
