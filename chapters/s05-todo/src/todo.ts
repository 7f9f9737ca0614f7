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
import {
  asObject,
  type EventSink,
  invalidInput,
  type SessionLog,
  type ToolDefinition,
} from "shared";
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

  /** Replaces the whole list, or returns an error and keeps the old list. */
  update(raw: unknown): { ok: true; rendered: string } | { ok: false; error: string } {
    const checked = checkTodos(raw);
    if (typeof checked === "string") return { ok: false, error: `Error: ${checked}` };
    this.items = checked;
    return { ok: true, rendered: this.render() };
  }

  render(): string {
    if (this.items.length === 0) return "No todos.";
    const lines = this.items.map((item) => `${MARKERS[item.status]} ${item.content}`);
    const done = this.items.filter((item) => item.status === "completed").length;
    return `${lines.join("\n")}\n\n(${done}/${this.items.length} completed)`;
  }
}

/** The validated list, or the message that says what is wrong (nothing is stored then). */
function checkTodos(raw: unknown): TodoItem[] | string {
  let value = raw;
  // Models sometimes send the array as a JSON string: accept it, never evaluate it.
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return "todos must be a list or JSON array string";
    }
    if (!Array.isArray(value)) return "todos must be a list or JSON array string";
  }
  if (!Array.isArray(value)) return "todos must be a list of {content, status} objects";
  if (value.length > MAX_TODOS) return `Max ${MAX_TODOS} todos allowed`;
  const items: TodoItem[] = [];
  for (const [i, entry] of value.entries()) {
    const item = asObject(entry);
    if (!item) return `todos[${i}] must be an object with content and status`;
    const content =
      typeof item.content === "string" || typeof item.content === "number"
        ? String(item.content).trim()
        : "";
    if (!content) return `todos[${i}] requires content`;
    const status = item.status === undefined ? "pending" : String(item.status).trim().toLowerCase();
    if (!STATUSES.includes(status as TodoStatus)) {
      return `todos[${i}] has invalid status '${String(item.status)}' (use pending, in_progress or completed)`;
    }
    items.push({ content, status: status as TodoStatus });
  }
  if (items.filter((item) => item.status === "in_progress").length > 1) {
    return "Only one todo can be in_progress at a time";
  }
  return items;
}

export interface TodoOptions {
  manager: TodoManager;
  emit: EventSink;
  log: SessionLog;
}

export function todoWriteTool(options: TodoOptions): ToolDefinition<{ todos: unknown }> {
  const { manager, emit, log } = options;
  return {
    name: "todo_write",
    aliases: ["TodoWrite"],
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
              status: { type: "string", enum: [...STATUSES] },
            },
            required: ["content", "status"],
          },
        },
      },
      required: ["todos"],
    },
    parse(input) {
      const todos = asObject(input)?.todos;
      if (todos === undefined) return invalidInput("todo_write", "todos is required");
      return { ok: true, value: { todos } };
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
  };
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
