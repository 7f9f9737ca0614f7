/**
 * s09: Memory — durable knowledge across sessions, and the project's own instructions.
 *
 *   start:        CLAUDE.md, AGENTS.md ──> Project instructions (in every prompt)
 *   turn begins:  typed line ──> recall (one small side call, or keywords) ──> system prompt:
 *                 … + Memory catalog (MEMORY.md) + Relevant memory records (the picked files)
 *   turn ends:    the turn's dialogue ──> extraction (side call) ──> filters ──> .harness/memory/<slug>.md
 *                 store ≥ 10 records ──> consolidation (snapshot, merge, roll back on failure)
 *
 * Run it:  pnpm --filter s09 start    (no key configured: the offline demo runs)
 *          pnpm --filter s09 demo
 * New here: memory.ts (the store, recall, extraction, consolidation, CLAUDE.md/AGENTS.md,
 * /memory). The loop is unchanged: extraction reads a per-turn journal filled through its
 * onAppend seam; this file rebuilds the system prompt at the start of each turn.
 */
import type Anthropic from "@anthropic-ai/sdk";
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
  type ToolMap,
  toolMap,
  toolSpecs,
  transcriptSink,
  UsageMeter,
} from "shared";
import { BASH_TIMEOUT_MS } from "./bash.ts";
import { type CompactLimits, Compactor, compactTool, limitsFromEnv } from "./compact.ts";
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
import { Memory, type Recalled } from "./memory.ts";
import { createPermissionGate, parseRules } from "./permissions.ts";
import { buildSystemPrompt, childSections, mainSections } from "./prompt.ts";
import { runRepl } from "./repl.ts";
import { loadSettings } from "./settings.ts";
import { catalog, describeSkills, loadSkills, loadSkillTool } from "./skills.ts";
import { taskTool } from "./subagent.ts";
import { TodoManager, todoReminder, todoWriteTool } from "./todo.ts";
import { baseTools } from "./tools.ts";

export const CHAPTER = { id: "s09", title: "Memory" };

export async function main(io: MainIO): Promise<number> {
  const errors = io.stderr ?? io.stdout;
  let config: ReturnType<typeof loadConfig>;
  let timeoutMs: number;
  let limits: CompactLimits;
  try {
    config = loadConfig(io.env);
    timeoutMs = positiveIntVar(io.env, "BASH_TIMEOUT_MS", BASH_TIMEOUT_MS);
    limits = limitsFromEnv(io.env);
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
  const skills = loadSkills(config.workdir);
  const reader = new LineReader({ input: io.stdin, output: io.stdout, printer });
  io.onSignal?.(() => reader.interrupt());
  const showAndLog = transcriptSink(log);
  const emit: EventSink = (event) => {
    printer.event(event);
    showAndLog(event);
    io.observer?.event?.(event);
  };
  const memory = new Memory({
    workdir: config.workdir,
    client,
    model: config.model,
    emit,
    log,
    extract: io.env.MEMORY_EXTRACT?.trim() !== "0",
  });
  /** The main system prompt for a turn, with what recall picked for it. */
  const systemFor = (recalled: Recalled) =>
    buildSystemPrompt(
      mainSections(
        config.workdir,
        skills.skills,
        memory.projectSection(),
        memory.memorySection(recalled),
      ),
    );
  const todos = { manager: new TodoManager(), emit, log };
  const compactor = new Compactor({
    workdir: config.workdir,
    client,
    model: config.model,
    emit,
    log,
    limits,
  });
  const childSystem = buildSystemPrompt(childSections(config.workdir, memory.projectSection()));
  const childRun = {
    scope: "sub",
    overheadChars: overheadOf(childSystem, toolMap(baseTools({ timeoutMs }))),
  };
  const subagent = {
    client,
    model: config.model,
    workdir: config.workdir,
    emit,
    log,
    childTools: () => toolMap(baseTools({ timeoutMs })),
    childSystem,
    childSeams: () => ({ ...hooks.loopSeams("sub"), ...compactor.loopSeams(childRun) }),
  };
  const tools = toolMap([
    ...baseTools({ timeoutMs }),
    todoWriteTool(todos),
    taskTool(subagent),
    loadSkillTool(skills.skills, log),
    compactTool(compactor),
  ]);
  const system = systemFor({ text: "", files: [], by: null });
  const mainRun = { scope: "main", overheadChars: overheadOf(system, tools) };
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
  for (const problem of skills.problems) printer.line(`[skills] ${problem}`, "warn");
  const names = skills.skills.map((skill) => skill.name);
  printer.line(`[skills] ${names.length} skill(s): ${names.join(", ") || "none"}`, "dim");
  printer.line("Type a request and press Enter. Type q (or quit, exit) to leave.");
  printer.line();
  log.record("config", {
    chapter: CHAPTER.id,
    model: config.model,
    workdir: config.workdir,
    system,
  });
  log.record("skills", { catalog: catalog(skills.skills), problems: skills.problems });

  const history: Anthropic.MessageParam[] = [];
  let lastRequest = "";
  try {
    return await runRepl({
      prompt: `${CHAPTER.id} >> `,
      reader,
      printer,
      usage,
      log,
      model: config.model,
      history,
      commands: new Map([
        [
          "skills",
          {
            description: "list the skills and any problems loading them",
            run: async () => printer.line(describeSkills(skills.skills, skills.problems)),
          },
        ],
        [
          "memory",
          {
            description: "list what is remembered and the project instruction files",
            run: async () => printer.line(memory.describe()),
          },
        ],
        [
          "compact",
          {
            description: "summarise the conversation now (optional: what to focus on)",
            run: async (focus: string) => {
              usage.startTurn();
              await compactor.compactNow(history, mainRun, lastRequest, focus);
              const spent = usage.formatTurn();
              if (spent) printer.line(spent, "dim");
            },
          },
        ],
      ]),
      prepareLine: (line) => {
        lastRequest = line;
        return hooks.userPromptSubmit(line);
      },
      runTurn: async (history, signal) => {
        // The prompt is built once per turn: recall needs the line that started it.
        const turnSystem = systemFor(await memory.recall(lastRequest));
        mainRun.overheadChars = overheadOf(turnSystem, tools);
        const journal = memory.startTurn(history);
        const result = await agentLoop(history, {
          client,
          model: config.model,
          tools,
          system: turnSystem,
          scope: "main",
          workdir: config.workdir,
          signal,
          emit,
          seams: {
            ...hooks.loopSeams("main"),
            ...todoReminder(todos),
            ...compactor.loopSeams(mainRun),
            onAppend: journal.onAppend,
          },
        });
        await journal.finish();
        return result;
      },
    });
  } finally {
    reader.close();
  }
}

/** What every request carries besides the history: the system prompt and the tools. */
function overheadOf(system: string, tools: ToolMap): number {
  return system.length + JSON.stringify(toolSpecs(tools)).length;
}

runIfEntry(import.meta.url, main);
