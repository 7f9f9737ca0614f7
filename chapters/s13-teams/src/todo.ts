/**
 * Planning (s05): a todo list the model writes and the harness keeps in view.
 *
 * On long tasks the model drifts: results pile up and the plan scrolls out of attention.
 * `todo_write` adds no ability to *do* anything; it gives the model a place to write its
 * plan down, echoes the plan back, and shows it to the user. Because models forget to
 * update it, a reminder rides along with the tool results after three tool rounds in a
 * row without a `todo_write`.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { defineTool, type EventSink, type SessionLog } from "shared";
import type { LoopSeams, Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";

export const MAX_TODOS = 20;
/** Tool rounds without a todo_write before the reminder is attached. */
export const REMIND_AFTER_ROUNDS = 3;
export const REMINDER_TEXT = "<reminder>Update your todos.</reminder>";
export const STATUSES = ["pending", "in_progress", "completed"] as const;

export type TodoStatus = (typeof STATUSES)[number];
export interface TodoItem {
  content: string;
  status: TodoStatus;
}

const MARKERS: Record<TodoStatus, string> = {
  pending: "[ ]",
  in_progress: "[>]",
  completed: "[x]",
};

/** The one todo list of the session (only the main agent has the tool). */
export class TodoManager {
  items: TodoItem[] = [];
  /** How many times todo_write has run (the reminder watches this). */
  runs = 0;

  /**
   * Replaces the whole list (each content trimmed), or returns an error and keeps the old
   * list. The tool's schema has checked each item's shape; these are the list's own rules.
   */
  update(todos: TodoItem[]): { ok: true; rendered: string } | { ok: false; error: string } {
    const items = todos.map((item) => ({ content: item.content.trim(), status: item.status }));
    const blank = items.findIndex((item) => !item.content);
    if (blank >= 0) return { ok: false, error: `Error: todos[${blank}] requires content` };
    if (items.filter((item) => item.status === "in_progress").length > 1) {
      return { ok: false, error: "Error: Only one todo can be in_progress at a time" };
    }
    this.items = items;
    return { ok: true, rendered: this.render() };
  }

  render(): string {
    if (this.items.length === 0) return "No todos.";
    const lines = this.items.map((item) => `${MARKERS[item.status]} ${item.content}`);
    const done = this.items.filter((item) => item.status === "completed").length;
    return `${lines.join("\n")}\n\n(${done}/${this.items.length} completed)`;
  }
}

export interface TodoOptions {
  manager: TodoManager;
  emit: EventSink;
  log: SessionLog;
}

export function todoWriteTool(options: TodoOptions) {
  const { manager, emit, log } = options;
  return defineTool({
    name: "todo_write",
    aliases: ["TodoWrite"],
    // Claude Code's TodoWrite takes { todos } too (its items also carry an activeForm).
    claudeCode: { name: "TodoWrite" },
    description:
      "Create and manage a task list for your current coding session. Send the whole list " +
      "each time (it replaces the old one); keep exactly one item in_progress while you work.",
    input_schema: {
      type: "object",
      properties: {
        todos: {
          type: "array",
          maxItems: MAX_TODOS,
          items: {
            type: "object",
            properties: {
              content: { type: "string", minLength: 1 },
              status: { type: "string", enum: STATUSES, default: "pending" },
            },
            required: ["content"],
          },
        },
      },
      required: ["todos"],
    },
    async run({ todos }, context) {
      manager.runs++;
      const result = manager.update(todos);
      if (!result.ok) return { content: result.error, isError: true };
      emit({ type: "notice", scope: context.scope, text: "## Current Tasks", tone: "warn" });
      emit({ type: "notice", scope: context.scope, text: result.rendered, tone: "info" });
      const lines = manager.items.map((item) => `[${item.status}] ${item.content}`);
      log.transcript("TASKS", lines.join("\n") || "(empty)", context.scope);
      // The panel above is what the user reads; the model reads the same text as its result.
      return { content: result.rendered, quiet: true };
    },
  });
}

/**
 * The reminder, for one loop run (every typed line starts at zero): it counts tool rounds
 * in which todo_write did not run, and after the third attaches the reminder after that
 * round's tool results, in the same user message.
 */
export function todoReminder(options: TodoOptions): Pick<LoopSeams, "afterResults"> {
  let silentRounds = 0;
  let seenRuns = options.manager.runs;
  return {
    afterResults(_round, run): Anthropic.TextBlockParam[] {
      if (options.manager.runs !== seenRuns) {
        seenRuns = options.manager.runs;
        silentRounds = 0;
        return [];
      }
      silentRounds++;
      if (silentRounds < REMIND_AFTER_ROUNDS) return [];
      silentRounds = 0;
      options.emit({
        type: "notice",
        scope: run.scope,
        text: `[todo] ${REMIND_AFTER_ROUNDS} tool rounds without a todo update: reminding the model`,
        tone: "dim",
      });
      return [{ type: "text", text: REMINDER_TEXT }];
    },
  };
}

/** This mechanism's part of the system prompt. */
export function planningSection() {
  return {
    id: "planning",
    text:
      "Planning: before a multi-step task, write your steps with todo_write; keep one item " +
      "in_progress and update statuses as you go.",
  };
}

/**
 * Planning as a mechanism: `todo_write` and the Planning section for the main agent, and
 * the reminder in each of its loop runs; no other agent has either.
 */
export function todoMechanism(harness: Pick<Harness, "emit" | "log">): Mechanism {
  const options: TodoOptions = { manager: new TodoManager(), emit: harness.emit, log: harness.log };
  const tool = todoWriteTool(options);
  return {
    name: "todo",
    tools: (role) => (role === "main" ? [tool] : []),
    sections: (role) => (role === "main" ? [planningSection()] : []),
    loop: (run) => (run.role === "main" ? todoReminder(options) : null),
  };
}
