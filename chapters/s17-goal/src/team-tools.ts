/**
 * Team tools (s13): the lead's seven (spawn_teammate, list_teammates, send_message,
 * request_shutdown, request_plan, review_plan, create_worktree), a teammate's own two after
 * the board's three (send_message, submit_plan), and the Team and Teammate sections of their
 * prompts. A tool's refusal (a TaskError and the like) comes back as an `Error: …` result.
 */
import { asObject, invalidInput, type Parsed, type ToolDefinition } from "shared";
import type { RunContext } from "./contract.ts";
import { MAILBOX_NAME } from "./mailbox.ts";
import type { PromptSection } from "./prompt.ts";
import { TASK_ID } from "./task-record.ts";
import { LEAD } from "./team-messages.ts";
import type { SpawnInput, TeamRuntime } from "./team-runtime.ts";
import type { Worktrees } from "./worktrees.ts";

type Field = "string" | "boolean";

/** The input check of the team tools: an object with these fields (`?` = optional). */
function fields<T>(tool: string, input: unknown, spec: Record<string, Field>): Parsed<T> {
  const object = asObject(input);
  if (!object) return invalidInput(tool, "input must be an object");
  const value: Record<string, unknown> = {};
  for (const [key, type] of Object.entries(spec)) {
    const name = key.replace(/\?$/, "");
    if (object[name] === undefined) {
      if (key.endsWith("?")) continue;
      return invalidInput(tool, `${name} is required`);
    }
    if (typeof object[name] !== type) return invalidInput(tool, `${name} must be a ${type}`);
    value[name] = object[name];
  }
  return { ok: true, value: value as T };
}

function schema(properties: Record<string, object>, required: string[]) {
  return { type: "object" as const, properties, required };
}

const STRING = { type: "string" };

/** A tool whose refusals (TaskError and the like) become `Error: …` results. */
function teamTool<T>(
  name: string,
  description: string,
  input_schema: ToolDefinition["input_schema"],
  spec: Record<string, Field>,
  run: (input: T, context: RunContext) => string | Promise<string>,
): ToolDefinition {
  return {
    name,
    aliases: [],
    description,
    input_schema,
    parse: (input) => fields<T>(name, input, spec),
    run: async (input, context) => {
      try {
        return { content: await run(input as T, context as RunContext) };
      } catch (error) {
        return { content: `Error: ${(error as Error).message}`, isError: true };
      }
    },
  };
}

/** The lead's seven team tools, in the order the model sees them. */
export function leadTools(team: TeamRuntime, worktrees: Worktrees): ToolDefinition[] {
  return [
    teamTool<SpawnInput>(
      "spawn_teammate",
      "Start a persistent teammate with its own context. Pass task_id to assign a ready task; " +
        "require_plan makes it submit a plan before changing anything.",
      schema(
        {
          name: { type: "string", pattern: MAILBOX_NAME.source },
          role: STRING,
          prompt: STRING,
          task_id: { type: "string", pattern: TASK_ID.source },
          require_plan: { type: "boolean" },
        },
        ["name", "role", "prompt"],
      ),
      {
        name: "string",
        role: "string",
        prompt: "string",
        "task_id?": "string",
        "require_plan?": "boolean",
      },
      (input) => team.spawn(input),
    ),
    teamTool("list_teammates", "List active teammates and their status.", schema({}, []), {}, () =>
      team.list(),
    ),
    teamTool<{ to: string; content: string }>(
      "send_message",
      "Send a message to an active teammate.",
      schema({ to: STRING, content: STRING }, ["to", "content"]),
      { to: "string", content: "string" },
      ({ to, content }) => team.messages.message(LEAD, to, content),
    ),
    teamTool<{ teammate: string }>(
      "request_shutdown",
      "Ask a teammate to finish its current step and shut down.",
      schema({ teammate: STRING }, ["teammate"]),
      { teammate: "string" },
      ({ teammate }) => team.messages.requestShutdown(teammate),
    ),
    teamTool<{ teammate: string; task: string }>(
      "request_plan",
      "Require a plan from a teammate before it changes the workspace.",
      schema({ teammate: STRING, task: STRING }, ["teammate", "task"]),
      { teammate: "string", task: "string" },
      ({ teammate, task }) => team.messages.requestPlan(teammate, task),
    ),
    teamTool<{ request_id: string; approve: boolean; feedback?: string }>(
      "review_plan",
      "Approve or reject a submitted plan by its request_id.",
      schema({ request_id: STRING, approve: { type: "boolean" }, feedback: STRING }, [
        "request_id",
        "approve",
      ]),
      { request_id: "string", approve: "boolean", "feedback?": "string" },
      ({ request_id, approve, feedback }) =>
        team.messages.reviewPlan(request_id, approve, feedback),
    ),
    teamTool<{ name: string; task_id: string }>(
      "create_worktree",
      "Create a git worktree on branch wt/<name> for a pending, unowned task; whoever claims " +
        "the task works there. A working directory, not a sandbox.",
      {
        ...schema(
          {
            name: {
              type: "string",
              pattern: "^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
              maxLength: 64,
            },
            task_id: STRING,
          },
          ["name", "task_id"],
        ),
        additionalProperties: false,
      },
      { name: "string", task_id: "string" },
      ({ name, task_id }) => worktrees.create(name, task_id),
    ),
  ];
}

/** A teammate's own tools after the board's three: send_message and submit_plan. */
export function teammateTools(team: TeamRuntime): ToolDefinition[] {
  return [
    ...team.claims.boardTools,
    teamTool<{ to: string; content: string }>(
      "send_message",
      "Send an intermediate message to lead or an active teammate (your final reply reaches lead by itself).",
      schema({ to: STRING, content: STRING }, ["to", "content"]),
      { to: "string", content: "string" },
      ({ to, content }, context) => team.messages.message(context.scope, to, content),
    ),
    teamTool<{ plan: string }>(
      "submit_plan",
      "Submit your plan to lead and wait for its decision before changing the workspace.",
      schema({ plan: STRING }, ["plan"]),
      { plan: "string" },
      ({ plan }, context) => team.messages.submitPlan(context.scope, plan),
    ),
  ];
}

/** The lead's section (stable, after the earlier chapters' sections). */
export function teamSection(): PromptSection {
  return {
    id: "team",
    text:
      "Team: for work that splits into parallel parts, propose a small team (names, roles, " +
      "what each does) and wait for the user's confirmation before spawn_teammate. Delegate by " +
      "creating a Task per parallel change; pass task_id when assigning ready work, and idle " +
      "teammates claim ready tasks by themselves. A teammate completes its current Task before " +
      "claiming another. Create a worktree only when separate directories prevent conflicts; " +
      "it changes the default directory only and is not a sandbox, and removing it stays with " +
      "the user. After spawning or messaging, end the turn instead of polling: the runtime " +
      "delivers [Team events] as a new turn; react to them. Shut teammates down with " +
      "request_shutdown when the work is done. Your task owner name is agent; teammates write " +
      "to you as lead.",
  };
}

/** Every teammate's section (its name and role follow at the end of its prompt). */
export function teammateSection(): PromptSection {
  return {
    id: "teammate",
    text:
      "Teammate: you are one of a team led by lead. Complete your assigned Task, call " +
      "complete_task, then reply with a concise result; the runtime delivers your final text " +
      "to lead. Do not claim an [Assigned task] again. When asked for a plan, call submit_plan " +
      "and wait for the decision before changing files or using bash. Your tools work in your " +
      "Task's directory, which is not a sandbox. Use send_message only for intermediate " +
      "coordination; address the coordinator as lead. Nothing here can ask the user: ask lead " +
      "for anything that needs approval.",
  };
}
