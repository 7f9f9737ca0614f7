/**
 * Team tools (s13): the lead's seven (spawn_teammate, list_teammates, send_message,
 * request_shutdown, request_plan, review_plan, create_worktree), a teammate's own two after
 * the board's three (send_message, submit_plan), and the Team and Teammate sections of their
 * prompts. A tool's refusal (a TaskError and the like) comes back as an `Error: …` result.
 */
import { defineTool, type FromSchema, type ObjectSchema, type ToolDefinition } from "shared";
import type { RunContext } from "./contract.ts";
import { MAILBOX_NAME } from "./mailbox.ts";
import type { PromptSection } from "./prompt.ts";
import { TASK_ID } from "./task-record.ts";
import { LEAD } from "./team-messages.ts";
import type { TeamRuntime } from "./team-runtime.ts";
import type { Worktrees } from "./worktrees.ts";

const STRING = { type: "string" } as const;

/**
 * A team tool, declared once: its schema (what the model reads and the loop checks) types
 * `run`'s input. A refusal (a TaskError and the like) becomes an `Error: …` result.
 */
function teamTool<const S extends ObjectSchema>(
  name: string,
  description: string,
  input_schema: S,
  run: (input: FromSchema<S>, context: RunContext) => string | Promise<string>,
): ToolDefinition {
  return defineTool({
    name,
    aliases: [],
    description,
    input_schema,
    run: async (input, context) => {
      try {
        return { content: await run(input, context as RunContext) };
      } catch (error) {
        return { content: `Error: ${(error as Error).message}`, isError: true };
      }
    },
  }) as ToolDefinition;
}

/** The lead's seven team tools, in the order the model sees them. */
export function leadTools(team: TeamRuntime, worktrees: Worktrees): ToolDefinition[] {
  return [
    teamTool(
      "spawn_teammate",
      "Start a persistent teammate with its own context. Pass task_id to assign a ready task; " +
        "require_plan makes it submit a plan before changing anything.",
      {
        type: "object",
        properties: {
          name: { type: "string", pattern: MAILBOX_NAME.source },
          role: STRING,
          prompt: STRING,
          task_id: { type: "string", pattern: TASK_ID.source },
          require_plan: { type: "boolean" },
        },
        required: ["name", "role", "prompt"],
      },
      (input) => team.spawn(input),
    ),
    teamTool(
      "list_teammates",
      "List active teammates and their status.",
      { type: "object", properties: {}, required: [] },
      () => team.list(),
    ),
    teamTool(
      "send_message",
      "Send a message to an active teammate.",
      { type: "object", properties: { to: STRING, content: STRING }, required: ["to", "content"] },
      ({ to, content }) => team.messages.message(LEAD, to, content),
    ),
    teamTool(
      "request_shutdown",
      "Ask a teammate to finish its current step and shut down.",
      { type: "object", properties: { teammate: STRING }, required: ["teammate"] },
      ({ teammate }) => team.messages.requestShutdown(teammate),
    ),
    teamTool(
      "request_plan",
      "Require a plan from a teammate before it changes the workspace.",
      {
        type: "object",
        properties: { teammate: STRING, task: STRING },
        required: ["teammate", "task"],
      },
      ({ teammate, task }) => team.messages.requestPlan(teammate, task),
    ),
    teamTool(
      "review_plan",
      "Approve or reject a submitted plan by its request_id.",
      {
        type: "object",
        properties: { request_id: STRING, approve: { type: "boolean" }, feedback: STRING },
        required: ["request_id", "approve"],
      },
      ({ request_id, approve, feedback }) =>
        team.messages.reviewPlan(request_id, approve, feedback),
    ),
    teamTool(
      "create_worktree",
      "Create a git worktree on branch wt/<name> for a pending, unowned task; whoever claims " +
        "the task works there. A working directory, not a sandbox.",
      {
        type: "object",
        properties: {
          name: {
            type: "string",
            pattern: "^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
            maxLength: 64,
          },
          task_id: STRING,
        },
        required: ["name", "task_id"],
        additionalProperties: false,
      },
      ({ name, task_id }) => worktrees.create(name, task_id),
    ),
  ];
}

/** A teammate's own tools after the board's three: send_message and submit_plan. */
export function teammateTools(team: TeamRuntime): ToolDefinition[] {
  return [
    ...team.claims.boardTools,
    teamTool(
      "send_message",
      "Send an intermediate message to lead or an active teammate (your final reply reaches lead by itself).",
      { type: "object", properties: { to: STRING, content: STRING }, required: ["to", "content"] },
      ({ to, content }, context) => team.messages.message(context.scope, to, content),
    ),
    teamTool(
      "submit_plan",
      "Submit your plan to lead and wait for its decision before changing the workspace.",
      { type: "object", properties: { plan: STRING }, required: ["plan"] },
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
