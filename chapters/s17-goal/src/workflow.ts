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
import { asObject, invalidInput, type ModelClient, type Tone, type ToolDefinition } from "shared";
import type { LoopSeams, Mechanism } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { INTERRUPTED_RESULT } from "./interrupt.ts";
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

export function workflowTool(
  runtime: WorkflowRuntime,
  onInterrupt: (runId: string) => void,
): ToolDefinition<Record<string, unknown>> {
  return {
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
    parse(input) {
      const object = asObject(input);
      if (!object) return invalidInput("Workflow", "input must be an object");
      const extra = Object.keys(object).filter(
        (key) => !["name", "args", "resume_from_run_id"].includes(key),
      );
      if (extra.length > 0)
        return invalidInput("Workflow", `unknown field ${extra.map((k) => `'${k}'`).join(", ")}`);
      if (typeof object.name !== "string") return invalidInput("Workflow", "name must be a string");
      return { ok: true, value: object };
    },
    // Rules name it as Workflow or Workflow(<name>): the name is what a rule's specifier matches.
    target: (input) => ({ kind: "exec", command: String(input.name) }),
    async run(input, context) {
      try {
        const outcome = await runtime.call(input, context.signal);
        if (context.signal.aborted) {
          onInterrupt(outcome.launched.runId);
          context.signal.throwIfAborted();
        }
        return { content: JSON.stringify(outcome) };
      } catch (error) {
        if (error instanceof WorkflowInputError)
          return { content: `Error: ${error.message}`, isError: true };
        throw error;
      }
    },
  };
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
 * The note an interrupted run leaves: the next model call finds the Workflow call that the
 * interrupt answered with `Interrupted by the user` and adds the run id to resume with.
 */
function resumeNotes(pending: string[]): LoopSeams {
  return {
    beforeModelCall: async (messages) => {
      if (pending.length === 0) return;
      for (const message of messages) {
        if (message.role !== "user" || typeof message.content === "string") continue;
        for (const block of message.content) {
          if (block.type !== "tool_result" || block.content !== INTERRUPTED_RESULT) continue;
          const call = messages
            .flatMap((m) => (typeof m.content === "string" ? [] : m.content))
            .find((b) => b.type === "tool_use" && b.id === block.tool_use_id);
          if (call?.type !== "tool_use" || call.name !== "Workflow") continue;
          const runId = pending.shift();
          if (!runId) return;
          block.content =
            `${INTERRUPTED_RESULT}. Workflow run ${runId} stopped; its finished agent calls are ` +
            `journaled: call Workflow with resume_from_run_id "${runId}" to continue it.`;
        }
      }
    },
  };
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
  const tool = workflowTool(runtime, (runId) => {
    interrupted.push(runId);
    say(
      `[workflow] ${runId} interrupted; its journal is kept (resume_from_run_id continues it)`,
      "warn",
    );
  });
  return {
    name: "workflow",
    tools: (role) => (role === "main" ? [tool as ToolDefinition] : []),
    sections: (role) => (role === "main" ? [workflowsSection(registry)] : []),
    loop: (run) => (run.role === "main" ? resumeNotes(interrupted) : null),
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
