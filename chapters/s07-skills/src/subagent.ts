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
import type { Mechanism } from "./contract.ts";
import type { AgentSetup, Harness } from "./harness.ts";
import { agentLoop, textOf } from "./loop.ts";

/** Model calls one child may make (Stop-forced rounds count too). */
export const MAX_SUB_TURNS = 30;
export const STOPPED_TEXT = `Subagent stopped after ${MAX_SUB_TURNS} turns without a final answer.`;
export const SUB_SCOPE = "sub";

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
}

export function taskTool(options: SubagentOptions) {
  return defineTool({
    name: "task",
    aliases: ["Task"],
    // Claude Code's Task takes this prompt too (with a description and a subagent type).
    claudeCode: { name: "Task" },
    description:
      "Delegate a focused, self-contained job (exploring code, a contained change) to a " +
      "subagent with a fresh context. It sees none of this conversation, so the prompt must " +
      "stand alone: say what to do, where, and what to report. Only its final answer returns.",
    input_schema: {
      type: "object",
      properties: {
        prompt: {
          type: "string",
          minLength: 1,
          description: "The complete task for the subagent.",
        },
      },
      required: ["prompt"],
    },
    async run({ prompt }, context) {
      // The schema refuses an empty prompt; one of only spaces is as empty to a subagent.
      if (!prompt.trim()) {
        return { content: "Error: task prompt must be a non-empty string", isError: true };
      }
      return runSubagent(prompt, options, context.signal);
    },
  });
}

/** Runs one child to its final answer (or the turn cap) and returns only that answer. */
export async function runSubagent(
  prompt: string,
  options: SubagentOptions,
  signal: AbortSignal,
): Promise<ToolOutput> {
  const say = (text: string) =>
    options.emit({ type: "notice", scope: "main", text, tone: "accent" });
  const { tools, system, seams } = options.child();
  options.log.record(
    "config",
    { prompt, system, tools: toolSpecs(tools).map((tool) => tool.name) },
    SUB_SCOPE,
  );
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: prompt }];
  say("[Subagent started]");
  try {
    const result = await agentLoop(messages, {
      client: options.client,
      model: options.model,
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
      content: `Error: subagent failed: ${describeApiError(error, options.model)}`,
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

/**
 * Delegation as a mechanism: `task` and the Delegation section for the main agent, and the
 * Subagent section in every child's prompt.
 */
export function subagentMechanism(
  harness: Pick<Harness, "client" | "model" | "workdir" | "emit" | "log" | "agent">,
): Mechanism {
  const options: SubagentOptions = {
    client: harness.client,
    model: harness.model,
    workdir: harness.workdir,
    emit: harness.emit,
    log: harness.log,
    child: () => harness.agent("subagent", SUB_SCOPE),
  };
  const tool = taskTool(options);
  return {
    name: "subagent",
    tools: (role) => (role === "main" ? [tool] : []),
    sections: (role) => {
      if (role === "main") return [delegationSection()];
      return role === "subagent" ? [subagentSection()] : [];
    },
  };
}
