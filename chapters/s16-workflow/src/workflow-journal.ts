/**
 * A workflow run's record on disk (s16): the snapshot's shape (`<runId>.json`: the task,
 * its status, usage and progress) and the journal a resume reads back, checked line by line.
 *
 *   .harness/workflows/<runId>.journal.jsonl  {"key","value"}, one line per finished call
 */
import { existsSync, readFileSync } from "node:fs";
import { asObject } from "shared";
import { WorkflowInputError } from "./workflow-core.ts";

// ---------------------------------------------------------------------------------------
// The snapshot

export type RunStatus = "running" | "completed" | "failed";

export interface ProgressEvent {
  type: "workflow_phase" | "workflow_log" | "workflow_agent";
  [field: string]: unknown;
}

export interface TaskState {
  taskId: string;
  taskType: "local_workflow";
  runId: string;
  workflowName: string;
  status: RunStatus;
  usage: { agents: number; tokens: number };
  progress: ProgressEvent[];
}

export interface Snapshot {
  runId: string;
  workflowName: string;
  args: Record<string, unknown>;
  task: TaskState;
}

// ---------------------------------------------------------------------------------------
// The journal

export interface JournalFile {
  records: Map<string, unknown>;
  /** The last line was cut off by a crash and is ignored. */
  tornTail: boolean;
}

/** A resumed run's journal, checked line by line; any bad line refuses the resume. */
export function loadJournal(file: string, runId: string): JournalFile {
  if (!existsSync(file)) throw new WorkflowInputError(`resume journal not found for ${runId}`);
  const lines = readFileSync(file, "utf8").split("\n");
  // Text after the last newline is a record a crash cut off (every write ends its line).
  const tail = lines.pop() ?? "";
  const records = new Map<string, unknown>();
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    let record: Record<string, unknown> | null = null;
    try {
      record = asObject(JSON.parse(line));
    } catch {
      // reported below
    }
    if (!record || typeof record.key !== "string" || !("value" in record))
      throw new WorkflowInputError(`invalid resume journal record at line ${index + 1}`);
    records.set(record.key, record.value);
  });
  return { records, tornTail: tail.trim() !== "" };
}
