/**
 * Workflows (s16): saved, trusted scripts that run many focused model calls. The model
 * never writes code: it picks a bundled workflow by name and passes `args`. The script
 * orchestrates agent calls with a few primitives, and every finished call is journaled, so
 * a run that was killed or interrupted resumes without redoing what it had finished.
 *
 *   Workflow {name, args, resume_from_run_id?}
 *     ──> the script's meta checked ──> run id (a fresh one reserved by exclusive create)
 *     ──> the run lock (lockfile.ts: a dead holder's lock is reclaimed)
 *     ──> resuming? snapshot, args and journal checked before anything is written
 *     ──> script(primitives): agent · parallel · pipeline · phase · log · workflow
 *           agent(prompt) ──> key = hash(label, prompt, schema)
 *                              in the journal? "cached" : one model call, checked, journaled
 *     ──> output, snapshot, last_run.txt ──> lock released ──> one tool_result
 *
 *   .harness/workflows/<runId>.json           the run: workflow, args, status, usage, progress
 *   .harness/workflows/<runId>.output.json    its result
 *   .harness/workflows/<runId>.journal.jsonl  {"key","value"}, one line per finished call
 *   .harness/workflows/<runId>.lock           {"pid","time"} while it runs
 *   .harness/workflows/last_run.txt           the newest finished run
 *
 * Lifecycle events and progress print as they happen; the model sees only the final result.
 *
 *   workflow-core.ts      what a workflow is, and the rules that need no disk and no model
 *   workflow-journal.ts   the run's record on disk: the snapshot's shape, the journal
 *   workflow-runtime.ts   one run: id, lock, resume checks, the primitives, `/workflows`
 *   workflow.ts           the model runner, the tool, the prompt section, the mechanism
 */
import type Anthropic from "@anthropic-ai/sdk";
import { defineTool, type ModelClient, type Tone, type ToolDefinition } from "shared";
import type { Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import type { PromptSection } from "./prompt.ts";
import {
  AGENT_MAX_TOKENS,
  AGENT_SYSTEM,
  type AgentRunner,
  bundledWorkflows,
  canonicalJson,
  extractJson,
  type Registry,
  WorkflowInputError,
} from "./workflow-core.ts";
import { WorkflowRuntime } from "./workflow-runtime.ts";

// ---------------------------------------------------------------------------------------
// Runners: the only way a workflow reaches a model

/**
 * One request per agent call through the harness's client (so s15's retries, fallback and
 * usage line cover it): no tools, max_tokens 2000, scope "workflow".
 */
export function modelRunner(client: ModelClient, model: () => string): AgentRunner {
  return {
    async run(prompt, { schema, signal }) {
      const content =
        schema === null
          ? prompt
          : `${prompt}\n\nReturn only one JSON object matching this schema:\n${canonicalJson(schema)}`;
      const message = await client.create(
        {
          model: model(),
          max_tokens: AGENT_MAX_TOKENS,
          system: AGENT_SYSTEM,
          messages: [{ role: "user", content }],
        },
        { scope: "workflow", signal },
      );
      const text = message.content
        .filter((block): block is Anthropic.TextBlock => block.type === "text")
        .map((block) => block.text)
        .join("");
      const tokens = message.usage.input_tokens + message.usage.output_tokens;
      return { value: schema === null ? text : extractJson(text), tokens };
    },
  };
}

// ---------------------------------------------------------------------------------------
// The tool, the prompt section and the mechanism

/** What the tool tells the mechanism about a run: stopped by Ctrl-C, or ended. */
export interface RunEvents {
  interrupted(runId: string): void;
  ended(runId: string): void;
}

export function workflowTool(runtime: WorkflowRuntime, events: RunEvents) {
  return defineTool({
    name: "Workflow",
    aliases: [],
    description: "Run a saved workflow by name. Pass input in args.",
    input_schema: {
      type: "object",
      properties: {
        name: { type: "string" },
        args: { type: "object" },
        resume_from_run_id: { type: "string" },
      },
      required: ["name"],
      additionalProperties: false,
    },
    // Rules name it as Workflow or Workflow(<name>): the name is what a rule's specifier matches.
    target: (input) => ({ kind: "exec", command: input.name }),
    async run(input, context) {
      try {
        const outcome = await runtime.call(input, context.signal);
        if (context.signal.aborted) {
          events.interrupted(outcome.launched.runId);
          context.signal.throwIfAborted();
        }
        events.ended(outcome.launched.runId);
        return { content: JSON.stringify(outcome) };
      } catch (error) {
        if (error instanceof WorkflowInputError)
          return { content: `Error: ${error.message}`, isError: true };
        throw error;
      }
    },
  });
}

export function workflowsSection(registry: Registry): PromptSection {
  const catalog = [...registry.values()].map(
    ({ meta }) => `- ${meta.name}: ${meta.description}${meta.args ? ` (args: ${meta.args})` : ""}`,
  );
  return {
    id: "workflows",
    text: [
      "Workflows: saved, trusted scripts that run many focused model calls. Call Workflow when " +
        "a request matches one; pass resume_from_run_id to continue an interrupted run.",
      ...catalog,
    ].join("\n"),
  };
}

/**
 * The runs a Ctrl-C stopped, until one is resumed to its end: a dynamic section of the
 * main agent's prompt, so the model knows what to resume without anyone rewriting the
 * result the interrupted call was given.
 */
export function interruptedSection(runIds: readonly string[]): PromptSection[] {
  if (runIds.length === 0) return [];
  return [
    {
      id: "workflows-interrupted",
      text:
        `Interrupted workflow runs: ${runIds.join(", ")}. Their finished agent calls are ` +
        "journaled: call Workflow with resume_from_run_id to continue one.",
      dynamic: true,
    },
  ];
}

export function workflowMechanism(
  harness: Pick<Harness, "workdir" | "client" | "model" | "emit" | "printer">,
  registry: Registry = bundledWorkflows(),
): Mechanism {
  const say = (text: string, tone: Tone) =>
    harness.emit({ type: "notice", scope: "main", text, tone });
  const runtime = new WorkflowRuntime({
    workdir: harness.workdir,
    registry,
    runner: modelRunner(harness.client, () => harness.model),
    say,
  });
  const interrupted: string[] = [];
  const tool = workflowTool(runtime, {
    interrupted: (runId) => {
      if (!interrupted.includes(runId)) interrupted.push(runId);
      say(
        `[workflow] ${runId} interrupted; its journal is kept (resume_from_run_id continues it)`,
        "warn",
      );
    },
    ended: (runId) => {
      const at = interrupted.indexOf(runId);
      if (at !== -1) interrupted.splice(at, 1);
    },
  });
  return {
    name: "workflow",
    tools: (role) => (role === "main" ? [tool as ToolDefinition] : []),
    sections: (role) =>
      role === "main" ? [workflowsSection(registry), ...interruptedSection(interrupted)] : [],
    commands: {
      workflows: {
        description: "workflow runs, newest first: run ID, workflow, status, agents, tokens",
        run: async () => {
          harness.printer.line(runtime.describeRuns());
          return undefined;
        },
      },
    },
  };
}
