/**
 * Subagents (s06): delegation with a fresh message list.
 *
 * Exploring a codebase fills the context with file contents the parent never needs again.
 * `task` hands a self-contained job to a child agent: the same loop function, a fresh
 * history holding only the task's prompt, its own system prompt and the five base tools
 * (no `task`, so delegation is one level deep; no `todo_write`, the plan is the parent's).
 * Only the child's final text comes back; its messages are dropped. The child shares the
 * workspace, and its tools, prompt and seams come from the same list of mechanisms as the
 * parent's, asked for the `subagent` role: the same permission gates and hooks, scoped `sub`.
 *
 * A project (or user) may define agents of its own in Claude Code's shape (agents.ts):
 * `task` then takes a `subagent_type`, and that child gets the definition's instructions,
 * only the tools its `tools` line names and the model its `model` line asks for.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  defineTool,
  describeApiError,
  type EventSink,
  isAbortError,
  type ModelClient,
  type SessionLog,
  type ToolOutput,
  toolSpecs,
} from "shared";
import {
  type AgentDefinition,
  agentModel,
  agentTools,
  loadAgents,
  loadPluginAgents,
} from "./agents.ts";
import type { Mechanism } from "./contract.ts";
import type { AgentSetup, Harness } from "./harness.ts";
import { agentLoop, textOf } from "./loop.ts";

/** Model calls one child may make (Stop-forced rounds count too). */
export const MAX_SUB_TURNS = 30;
export const STOPPED_TEXT = `Subagent stopped after ${MAX_SUB_TURNS} turns without a final answer.`;
export const SUB_SCOPE = "sub";
/** The `subagent_type` of a child without a definition, as Claude Code names it. */
export const GENERAL_PURPOSE = "general-purpose";

export interface SubagentOptions {
  client: ModelClient;
  model: string;
  workdir: string;
  emit: EventSink;
  log: SessionLog;
  /**
   * What one child run gets: its own tool map, system prompt and fresh seams, made from the
   * mechanisms for the `subagent` role (never derived from the parent's list).
   */
  child: () => AgentSetup;
  /** The project's and the user's agent definitions (agents.ts); none: no `subagent_type`. */
  agents?: AgentDefinition[];
  /** Resolves a definition's model alias (ANTHROPIC_DEFAULT_SONNET_MODEL …). */
  env?: Record<string, string | undefined>;
}

export function taskTool(options: SubagentOptions) {
  const agents = options.agents ?? [];
  const byName = new Map(agents.map((agent) => [agent.name, agent]));
  const types = [GENERAL_PURPOSE, ...byName.keys()].join(", ");
  // Each definition's unknown tool names are reported once a session.
  const reported = new Set<string>();
  return defineTool({
    name: "task",
    aliases: ["Task"],
    // Claude Code's Task takes this prompt and subagent type (and a short description).
    claudeCode: {
      name: "Task",
      input: (input) => ({ ...input, subagent_type: input.subagent_type ?? GENERAL_PURPOSE }),
    },
    description:
      "Delegate a focused, self-contained job (exploring code, a contained change) to a " +
      "subagent with a fresh context. It sees none of this conversation, so the prompt must " +
      "stand alone: say what to do, where, and what to report. Only its final answer returns." +
      (agents.length > 0
        ? `\nAgent types (subagent_type):\n- ${GENERAL_PURPOSE}: any task (the default)\n` +
          agents.map((agent) => `- ${agent.name}: ${agent.description}`).join("\n")
        : ""),
    input_schema: {
      type: "object",
      properties: {
        prompt: {
          type: "string",
          minLength: 1,
          description: "The complete task for the subagent.",
        },
        subagent_type: {
          type: "string",
          description: `Which agent runs it: ${types}.`,
        },
      },
      required: ["prompt"],
    },
    async run({ prompt, subagent_type: type }, context) {
      // The schema refuses an empty prompt; one of only spaces is as empty to a subagent.
      if (!prompt.trim()) {
        return { content: "Error: task prompt must be a non-empty string", isError: true };
      }
      if (type === undefined || type === GENERAL_PURPOSE) {
        return runSubagent(prompt, options, context.signal);
      }
      // A plugin's `kit:name` answers to `name` too, when no other agent has that name.
      const plain = agents.filter((agent) => agent.name.endsWith(`:${type}`));
      const agent = byName.get(type) ?? (plain.length === 1 ? plain[0] : undefined);
      if (!agent) {
        return {
          content: `Error: Unknown subagent_type '${type}'. Available: ${types}`,
          isError: true,
        };
      }
      return runSubagent(prompt, options, context.signal, { agent, reported });
    },
  });
}

/** A child run as a definition asks: its tools, its instructions after the prompt, its model. */
function defined(
  setup: AgentSetup,
  definition: { agent: AgentDefinition; reported: Set<string> },
  options: SubagentOptions,
): AgentSetup & { model: string } {
  const { agent, reported } = definition;
  const { tools, unknown } = agentTools(agent, setup.tools);
  const { model, note } = agentModel(agent, options.model, options.env ?? {});
  const notes = [
    ...unknown.map((name) => `tool '${name}' is not a tool a subagent has here; left out`),
    ...(note ? [note] : []),
  ];
  for (const text of notes.filter((text) => !reported.has(text))) {
    reported.add(text);
    options.emit({
      type: "notice",
      scope: "main",
      text: `[agents] ${agent.file}: ${text}`,
      tone: "warn",
    });
  }
  const system = `${setup.system}\n\nAgent ${agent.name} (${agent.file}):\n${agent.prompt}`;
  return { ...setup, tools, system, model };
}

/**
 * Runs one child to its final answer (or the turn cap) and returns only that answer; with
 * a definition, the child is that agent.
 */
export async function runSubagent(
  prompt: string,
  options: SubagentOptions,
  signal: AbortSignal,
  definition?: { agent: AgentDefinition; reported: Set<string> },
): Promise<ToolOutput> {
  const say = (text: string) =>
    options.emit({ type: "notice", scope: "main", text, tone: "accent" });
  const setup = options.child();
  const { tools, system, seams, model } = definition
    ? defined(setup, definition, options)
    : { ...setup, model: options.model };
  const agent = definition?.agent.name;
  options.log.record(
    "config",
    { prompt, system, tools: toolSpecs(tools).map((tool) => tool.name), agent, model },
    SUB_SCOPE,
  );
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: prompt }];
  say(agent ? `[Subagent started: ${agent}]` : "[Subagent started]");
  try {
    const result = await agentLoop(messages, {
      client: options.client,
      model,
      tools,
      system,
      scope: SUB_SCOPE,
      role: "subagent",
      request: prompt,
      workdir: options.workdir,
      maxTurns: MAX_SUB_TURNS,
      signal,
      emit: options.emit,
      seams,
    });
    if (result.stopped === "max_turns") {
      say("[Subagent stopped]");
      return { content: STOPPED_TEXT, isError: true };
    }
    say("[Subagent done]");
    const hasText = result.response.content.some((block) => block.type === "text" && block.text);
    return { content: hasText ? textOf(result.response) : "(no summary)" };
  } catch (error) {
    if (isAbortError(error) || signal.aborted) throw error;
    say("[Subagent stopped]");
    return {
      content: `Error: subagent failed: ${describeApiError(error, model)}`,
      isError: true,
    };
  }
}

/** The parent's part of the system prompt. */
export function delegationSection() {
  return {
    id: "delegation",
    text:
      "Delegation: use task for focused exploration or a self-contained subtask. The subagent " +
      "starts with none of this conversation, so give it a complete prompt; only its final " +
      "answer comes back.",
  };
}

/** The child's own section, after the base sections. */
export function subagentSection() {
  return {
    id: "subagent",
    text:
      "Subagent: another agent gave you one self-contained task. Complete it, then reply with " +
      "a concise final answer; only that answer is returned.",
  };
}

/** What `/agents` prints: each definition, then the problems found at start. */
export function describeAgents(agents: AgentDefinition[], problems: string[]): string {
  const lines = agents.map((agent) => {
    const tools = agent.tools === null ? "every tool" : `tools: ${agent.tools.join(", ")}`;
    const model = agent.model ? `, model: ${agent.model}` : "";
    return `- ${agent.name}: ${agent.description}\n    ${agent.file} (${tools}${model})`;
  });
  if (lines.length === 0)
    lines.push("(no agent definitions in .claude/agents/ or ~/.claude/agents/)");
  return [...lines, ...problems.map((problem) => `[agents] ${problem}`)].join("\n");
}

/**
 * Delegation as a mechanism: `task` and the Delegation section for the main agent, the
 * Subagent section in every child's prompt, the agent definitions read at start (the
 * banner names them and what was skipped; `/agents` lists them).
 */
export function subagentMechanism(
  harness: Pick<
    Harness,
    "client" | "model" | "workdir" | "emit" | "log" | "agent" | "env" | "printer" | "plugins"
  >,
): Mechanism {
  const own = loadAgents(harness.workdir, harness.env.HOME);
  const fromPlugins = loadPluginAgents(harness.plugins.plugins, own.agents);
  const agents = [...own.agents, ...fromPlugins.agents];
  const problems = [...own.problems, ...fromPlugins.problems];
  const options: SubagentOptions = {
    client: harness.client,
    model: harness.model,
    workdir: harness.workdir,
    emit: harness.emit,
    log: harness.log,
    child: () => harness.agent("subagent", SUB_SCOPE),
    agents,
    env: harness.env,
  };
  const tool = taskTool(options);
  return {
    name: "subagent",
    tools: (role) => (role === "main" ? [tool] : []),
    sections: (role) => {
      if (role === "main") return [delegationSection()];
      return role === "subagent" ? [subagentSection()] : [];
    },
    commands: {
      agents: {
        description: "list the agent definitions and any problems reading them",
        run: async () => {
          harness.printer.line(describeAgents(agents, problems));
          return undefined;
        },
      },
    },
    start: () => [
      ...problems.map((problem) => ({ text: `[agents] ${problem}`, tone: "warn" as const })),
      ...(agents.length > 0
        ? [
            {
              text: `[agents] ${agents.length} agent(s): ${agents.map((a) => `${a.name} (${a.file})`).join(", ")}`,
              tone: "dim" as const,
            },
          ]
        : []),
    ],
  };
}
