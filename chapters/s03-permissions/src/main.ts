/**
 * s03: Permissions — three gates stand between the model's request and every tool call.
 *
 *   tool_use ──> Gate 1: deny list (bash) ──────────────── deny, nobody asked
 *                  │ settings rules: deny > ask > allow   (.claude/settings*.json)
 *                  v
 *                Gate 2: destructive command? outside WORKDIR? write to .claude/?
 *                  │ yes                       │ no
 *                  v                           v
 *                Gate 3: "Allow? [y/N]" ──y──> run ──> tool_result
 *                  │ n, EOF, or no terminal
 *                  v
 *                tool_result "Permission denied …" (is_error, names the gate)
 *
 * Run it:  pnpm --filter s03 start    (no key configured: the offline demo runs)
 *          pnpm --filter s03 demo
 * New here: permissions.ts (the pipeline, the command reader, the rules) and settings.ts
 * (Claude Code's .claude/settings.json and settings.local.json). guard.ts is gone: the
 * pipeline replaces its block list and its hard workspace refusal, so an approved call
 * outside the workspace really runs. bash.ts, tools.ts and the loop are unchanged; this
 * file loads the settings and plugs the pipeline into the loop's beforeToolCall seam.
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
import { agentLoop } from "./loop.ts";
import { createPermissionGate, parseRules } from "./permissions.ts";
import { buildSystemPrompt, mainSections } from "./prompt.ts";
import { runRepl } from "./repl.ts";
import { loadSettings } from "./settings.ts";
import { baseTools } from "./tools.ts";

export const CHAPTER = { id: "s03", title: "Permissions" };

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
  const emit: EventSink = (event) => {
    printer.event(event);
    showAndLog(event);
    io.observer?.event?.(event);
  };
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

  printer.line(printer.style.bold(`${CHAPTER.id}: ${CHAPTER.title}`));
  printer.line(`Workspace: ${config.workdir} - model: ${config.model}`, "dim");
  for (const notice of config.notices) printer.line(notice, "warn");
  for (const problem of [...settings.problems, ...problems])
    printer.line(`[settings] ${problem}`, "warn");
  for (const file of settings.files) {
    const count = (kind: string) => rules.filter((r) => r.file === file.label && r.kind === kind);
    const summary = ["allow", "deny", "ask"].map((kind) => `${count(kind).length} ${kind}`);
    printer.line(`[permissions] ${file.label}: ${summary.join(", ")} rules`, "dim");
  }
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
          emit,
          seams: { beforeToolCall: permissionGate },
        }),
    });
  } finally {
    reader.close();
  }
}

runIfEntry(import.meta.url, main);
