/**
 * Tasks (s10): a task graph on disk that outlives the session.
 *
 * todo_write (s05) is a checklist in memory: no IDs, no dependencies, gone at exit. A task
 * here is a file (tasks-store.ts) with an ID, a status, an owner and the IDs it is blocked
 * by. The model builds the graph in two phases, because calls made in one reply are fixed
 * before any ID exists:
 *
 *   1. create_task × n                 ──> "Created task_1a2b3c4d: schema (p5)" …
 *   2. update_task(task_id, addBlockedBy: [IDs from step 1])   checked whole, then written
 *
 *   pending ──claim_task──> in_progress ──complete_task──> completed
 *            (only when every             "Unblocked: …" = what this completion made
 *             prerequisite is completed)   startable, nothing else
 *
 * Every change holds the store's lock, so two REPLs on one workspace never both own a task.
 * `/tasks` shows the graph without a model call.
 */
import {
  defineTool,
  type EventSink,
  type Tone,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
} from "shared";
import type { BannerLine, Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { STATUSES, TASK_ID, type Task, type TaskStatus } from "./task-record.ts";
import { TaskStore } from "./tasks-store.ts";

/** The main agent's name as an owner, in every process. */
export const OWNER = "agent";

const MARKERS: Record<TaskStatus, string> = {
  pending: "[ ]",
  in_progress: "[>]",
  completed: "[x]",
};
const ID_SCHEMA = { type: "string", pattern: TASK_ID.source } as const;
/** get_task, claim_task, complete_task: the ID is checked when the call runs (no pattern). */
const taskIdSchema = () =>
  ({
    type: "object",
    properties: { task_id: { type: "string" } },
    required: ["task_id"],
  }) as const;

export interface TaskToolOptions {
  store: TaskStore;
  /** Who claims and completes: `agent` for the main agent. */
  owner: string;
  emit: EventSink;
}

/** One `list_tasks` line; `blocker` renders each prerequisite (its ID, or more). */
export function taskLine(task: Task, blocker: (id: string) => string = (id) => id): string {
  const marker = MARKERS[task.status] ?? "[?]";
  let line = `${marker} ${task.id} (p${task.priority}): ${task.subject} [${task.status}]`;
  if (task.owner) line += ` [${task.owner}]`;
  if (task.blockedBy.length > 0) line += ` (blockedBy: ${task.blockedBy.map(blocker).join(", ")})`;
  return line;
}

/**
 * What `list_tasks` returns: one line per task in file-name order, then one per skipped
 * file. `/tasks` adds each blocker's status (`missing` or `unreadable` when it has none).
 */
export function renderTaskList(
  store: TaskStore,
  listing = store.list(),
  withBlockerStatus = false,
): string {
  const { tasks, skipped } = listing;
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const broken = new Set(skipped.map((entry) => entry.file));
  const blocker = (id: string) => {
    const status = byId.get(id)?.status;
    if (status) return `${id} [${status}]`;
    return `${id} [${broken.has(store.relative(store.pathOf(id))) ? "unreadable" : "missing"}]`;
  };
  const lines = tasks.map((task) => taskLine(task, withBlockerStatus ? blocker : undefined));
  if (lines.length === 0) lines.push("No tasks. Use create_task to add some.");
  for (const entry of skipped) lines.push(`[!] ${entry.file}: ${entry.reason} (skipped)`);
  return lines.join("\n");
}

/** `/tasks`: one count line per status, then the list with each blocker's status. */
export function describeTasks(store: TaskStore): string {
  try {
    const listing = store.list();
    const counts = STATUSES.map(
      (status) => `${status}: ${listing.tasks.filter((task) => task.status === status).length}`,
    );
    return [...counts, renderTaskList(store, listing, true)].join("\n");
  } catch (error) {
    return `Error: ${(error as Error).message}`;
  }
}

/** This mechanism's part of the main agent's system prompt. */
export function tasksSection() {
  return {
    id: "tasks",
    text:
      "Tasks: for work that must outlive this session or has dependencies, use the task " +
      "tools: create every task first, then add dependencies with update_task using the exact " +
      "IDs create_task returned; claim a task before working on it and complete it when done. " +
      "todo_write stays your short checklist; the task tool (delegation) is unrelated.",
  };
}

/** A refusal from the store (or the file system) becomes an is_error result, never a throw. */
async function guarded(work: () => Promise<ToolOutput>): Promise<ToolOutput> {
  try {
    return await work();
  } catch (error) {
    return { content: `Error: ${(error as Error).message}`, isError: true };
  }
}

/** The six task tools, in the order the model sees them. */
export function taskTools(options: TaskToolOptions): ToolDefinition[] {
  const { store, owner } = options;
  const say = (context: ToolContext, text: string, tone: Tone) =>
    options.emit({ type: "notice", scope: context.scope, text: `  ${text}`, tone });

  const createTask = defineTool({
    name: "create_task",
    aliases: [],
    description: "Create a task (priority 0-10, 5 default) and return its runtime-generated ID.",
    input_schema: {
      type: "object",
      properties: {
        subject: { type: "string" },
        description: { type: "string" },
        priority: { type: "integer", minimum: 0, maximum: 10 },
      },
      required: ["subject"],
      additionalProperties: false,
    },
    run: (input, context) =>
      guarded(async () => {
        const task = await store.create(input);
        say(context, `[create] ${task.subject}`, "info");
        return { content: `Created ${task.id}: ${task.subject} (p${task.priority})` };
      }),
  });

  const updateTask = defineTool({
    name: "update_task",
    aliases: [],
    description: "Add dependencies using IDs returned by create_task.",
    input_schema: {
      type: "object",
      properties: {
        task_id: ID_SCHEMA,
        addBlockedBy: { type: "array", items: ID_SCHEMA, minItems: 1 },
      },
      required: ["task_id", "addBlockedBy"],
      additionalProperties: false,
    },
    run: (input, context) =>
      guarded(async () => {
        const { task } = await store.addDependencies(input.task_id, input.addBlockedBy);
        const edges = task.blockedBy.join(", ") || "(none)";
        say(context, `[update] ${task.subject} blockedBy: ${edges}`, "info");
        return { content: `Updated ${task.id} blockedBy: ${edges}` };
      }),
  });

  const listTasks = defineTool({
    name: "list_tasks",
    aliases: [],
    description: "List tasks with status, owner, and dependencies.",
    input_schema: { type: "object", properties: {} },
    run: () => guarded(async () => ({ content: renderTaskList(store) })),
  });

  const getTask = defineTool({
    name: "get_task",
    aliases: [],
    description: "Get a task by ID.",
    input_schema: taskIdSchema(),
    run: ({ task_id }) =>
      guarded(async () => ({ content: JSON.stringify(store.load(task_id), null, 2) })),
  });

  const claimTask = defineTool({
    name: "claim_task",
    aliases: [],
    description: "Claim a pending task whose dependencies are complete.",
    input_schema: taskIdSchema(),
    run: ({ task_id }, context) =>
      guarded(async () => {
        const claimed = await store.claim(task_id, owner);
        if (!claimed.ok) {
          // Python's list repr, as upstream prints it: ['task_a', 'task_b'].
          const ids = claimed.blockedBy.map((id) => `'${id}'`).join(", ");
          return { content: `Blocked by: [${ids}]`, isError: true };
        }
        const { task } = claimed;
        say(context, `[claim] ${task.subject} -> in_progress (owner: ${owner})`, "accent");
        return { content: `Claimed ${task.id} (${task.subject})` };
      }),
  });

  const completeTask = defineTool({
    name: "complete_task",
    aliases: [],
    description: "Complete the task claimed by this agent.",
    input_schema: taskIdSchema(),
    run: ({ task_id }, context) =>
      guarded(async () => {
        const { task, unblocked } = await store.complete(task_id, owner);
        say(context, `[complete] ${task.subject}`, "success");
        let content = `Completed ${task.id} (${task.subject})`;
        if (unblocked.length > 0) {
          const subjects = unblocked.map((t) => t.subject).join(", ");
          say(context, `[unblocked] ${subjects}`, "warn");
          content += `\nUnblocked: ${subjects}`;
        }
        return { content };
      }),
  });

  return [createTask, updateTask, listTasks, getTask, claimTask, completeTask] as ToolDefinition[];
}

/** The banner line when a session starts on a workspace that already has tasks. */
function startLines(store: TaskStore): BannerLine[] {
  try {
    const { tasks, skipped } = store.list();
    if (tasks.length === 0 && skipped.length === 0) return [];
    const counts = STATUSES.map(
      (status) => `${tasks.filter((task) => task.status === status).length} ${status}`,
    ).join(", ");
    const bad = skipped.length > 0 ? `, ${skipped.length} unreadable file(s)` : "";
    return [
      {
        text: `[tasks] ${tasks.length} task(s) in ${store.relative(store.dir)}: ${counts}${bad}; /tasks shows them`,
        tone: "dim",
      },
    ];
  } catch (error) {
    return [{ text: `[tasks] ${(error as Error).message}`, tone: "warn" }];
  }
}

/**
 * Tasks as a mechanism: the six tools and the Tasks section for the main agent (subagents
 * keep the five base tools), `/tasks`, a banner line when tasks exist, and the lock
 * released when the session ends.
 */
export function tasksMechanism(harness: Pick<Harness, "workdir" | "emit" | "printer">): Mechanism {
  const store = new TaskStore(harness.workdir, {
    say: (text) => harness.emit({ type: "notice", scope: "main", text, tone: "warn" }),
  });
  const tools = taskTools({ store, owner: OWNER, emit: harness.emit });
  return {
    name: "tasks",
    tools: (role) => (role === "main" ? tools : []),
    sections: (role) => (role === "main" ? [tasksSection()] : []),
    commands: {
      tasks: {
        description: "show the task graph: counts by status, then each task and its blockers",
        run: async () => {
          harness.printer.line(describeTasks(store));
          return undefined;
        },
      },
    },
    start: () => startLines(store),
    close: () => store.close(),
  };
}
