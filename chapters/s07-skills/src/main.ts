/**
 * s07: Skill Loading — a catalog of skills in the system prompt, the full text on demand.
 *
 *   start: skills/<name>/SKILL.md, .claude/skills/<name>/SKILL.md ──> each name + description
 *   system prompt:  Skills available:
 *                   - code-review: Review a code change …      (one line per skill)
 *   model ──> load_skill("code-review") ──> the whole SKILL.md as the tool result
 *
 * Run it:  pnpm --filter s07 start    (no key configured: the offline demo runs)
 *          pnpm --filter s07 demo
 * New here: skills.ts (frontmatter parsing, the scan, the catalog, load_skill). prompt.ts
 * adds the Skills section; this file loads the skills once, adds load_skill to the parent's
 * tools (the subagent gets neither the tool nor the catalog) and the /skills command.
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
import { buildSystemPrompt, childSections, mainSections } from "./prompt.ts";
import { runRepl } from "./repl.ts";
import { loadSettings } from "./settings.ts";
import { catalog, describeSkills, loadSkills, loadSkillTool } from "./skills.ts";
import { taskTool } from "./subagent.ts";
import { TodoManager, todoReminder, todoWriteTool } from "./todo.ts";
import { baseTools } from "./tools.ts";

export const CHAPTER = { id: "s07", title: "Skill Loading" };

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
  const skills = loadSkills(config.workdir);
  const system = buildSystemPrompt(mainSections(config.workdir, skills.skills));
  const reader = new LineReader({ input: io.stdin, output: io.stdout, printer });
  io.onSignal?.(() => reader.interrupt());
  const showAndLog = transcriptSink(log);
  const emit: EventSink = (event) => {
    printer.event(event);
    showAndLog(event);
    io.observer?.event?.(event);
  };
  const todos = { manager: new TodoManager(), emit, log };
  const subagent = {
    client,
    model: config.model,
    workdir: config.workdir,
    emit,
    log,
    childTools: () => toolMap(baseTools({ timeoutMs })),
    childSystem: buildSystemPrompt(childSections(config.workdir)),
    childSeams: () => hooks.loopSeams("sub"),
  };
  const tools = toolMap([
    ...baseTools({ timeoutMs }),
    todoWriteTool(todos),
    taskTool(subagent),
    loadSkillTool(skills.skills, log),
  ]);
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

  try {
    return await runRepl({
      prompt: `${CHAPTER.id} >> `,
      reader,
      printer,
      usage,
      log,
      model: config.model,
      history: [],
      commands: new Map([
        [
          "skills",
          {
            description: "list the skills and any problems loading them",
            run: async () => printer.line(describeSkills(skills.skills, skills.problems)),
          },
        ],
      ]),
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
