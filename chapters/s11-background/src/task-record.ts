/**
 * The task record: the fields of one task file, what a file must hold to be read as a task
 * (a file that does not is reported with the reason given here), and the checks a request
 * passes before the store (tasks-store.ts) takes its lock: a well-formed ID, a priority in
 * range. A refusal is a TaskError, which the tools print as `Error: <message>`.
 */

export const STATUSES = ["pending", "in_progress", "completed"] as const;
export type TaskStatus = (typeof STATUSES)[number];
export const TASK_ID = /^task_[0-9a-f]{8}$/;
export const DEFAULT_PRIORITY = 5;

export interface Task {
  id: string;
  subject: string;
  description: string;
  status: TaskStatus;
  owner: string | null;
  blockedBy: string[];
  priority: number;
  /** Keys this chapter does not know (a later chapter's, a person's) are kept. */
  [key: string]: unknown;
}

/** A file in the folder that is not a readable task, and why. */
export interface Skipped {
  /** The path relative to the workspace: `.harness/tasks/task_x.json`. */
  file: string;
  reason: string;
}

/** A refusal the model can act on; the tools print it as `Error: <message>`. */
export class TaskError extends Error {}

/** `'text'` as Python's repr writes a string (the upstream form of the pinned messages). */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = text
    .replaceAll("\\", "\\\\")
    .replaceAll("\n", "\\n")
    .replaceAll("\r", "\\r")
    .replaceAll("\t", "\\t");
  return quote + (quote === "'" ? escaped.replaceAll("'", "\\'") : escaped) + quote;
}

export function checkTaskId(id: unknown): string {
  if (typeof id !== "string" || !TASK_ID.test(id)) {
    throw new TaskError(`Invalid task ID: ${pyRepr(String(id))}`);
  }
  return id;
}

export function checkPriority(value: unknown): number {
  if (value === undefined) return DEFAULT_PRIORITY;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 10) {
    throw new TaskError("priority must be an integer between 0 and 10");
  }
  return value;
}

/** Why `value` is not the task `id`, or null when it is one. */
export function taskProblem(value: unknown, id: string): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "not a JSON object";
  }
  const task = value as Record<string, unknown>;
  if (task.id !== id) return `Task file ID does not match ${id}`;
  if (typeof task.subject !== "string" || !task.subject.trim()) {
    return "subject must be a non-empty string";
  }
  if (typeof task.description !== "string") return "description must be a string";
  if (!STATUSES.includes(task.status as TaskStatus)) {
    return `status must be one of ${STATUSES.join(", ")} (found ${JSON.stringify(task.status)})`;
  }
  if (task.owner !== null && typeof task.owner !== "string") {
    return "owner must be a string or null";
  }
  const edges = task.blockedBy;
  if (
    !Array.isArray(edges) ||
    !edges.every((edge) => typeof edge === "string" && TASK_ID.test(edge))
  ) {
    return "blockedBy must be a list of task IDs";
  }
  try {
    checkPriority(task.priority);
  } catch (error) {
    return (error as Error).message;
  }
  return null;
}
