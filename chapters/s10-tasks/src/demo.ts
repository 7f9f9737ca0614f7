/**
 * s10's offline demo: the four-task graph of the chapter's first "try it" prompt, built in
 * two phases: four create_task calls in one reply, then update_task calls that use the IDs
 * those calls returned. The schema task is claimed and completed, which unblocks the API
 * endpoints and the docs (not the tests: they wait on the endpoints); `/tasks` shows the
 * graph. The demo prints, under `[sent to the model]`, the create_task results the second
 * phase reads its IDs from. Run: pnpm --filter s10 demo
 */
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;

/** The text of every tool_result the request carries, oldest first. */
function results(request: Request): string[] {
  return request.messages.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.flatMap((block) =>
          block.type === "tool_result" && typeof block.content === "string" ? [block.content] : [],
        ),
  );
}

/** The ID create_task returned for `subject` (the model reads it from the result). */
function idOf(request: Request, subject: string): string {
  for (const result of results(request)) {
    const created = /^Created (task_[0-9a-f]{8}): (.*) \(p\d+\)$/.exec(result);
    if (created?.[2] === subject) return created[1]!;
  }
  throw new Error(`demo: no task '${subject}' was created`);
}

const said = (needle: string) => (request: Request) => {
  const last = request.messages.at(-1);
  return last?.role === "user" && typeof last.content === "string" && last.content.includes(needle);
};
const lastResultStarts = (prefix: string) => (request: Request) => {
  const last = request.messages.at(-1);
  return (
    last?.role === "user" &&
    typeof last.content !== "string" &&
    last.content.some(
      (block) =>
        block.type === "tool_result" &&
        typeof block.content === "string" &&
        block.content.startsWith(prefix),
    )
  );
};

const SCHEMA = "setup database schema";
const API = "create API endpoints";
const TESTS = "write tests";
const DOCS = "write docs";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s10",
  shows:
    "a task graph built in two phases (create, then dependencies by ID); completing one task unblocks others.",
  prompts: [
    `Create tasks: ${SCHEMA}, ${API} (depends on schema), ${TESTS} (depends on endpoints), ${DOCS} (depends on schema)`,
    "Claim the first unblocked task and complete it",
    "/tasks",
  ],
  script: [
    {
      name: "phase 1: every node at once (no ID exists yet)",
      when: said("Create tasks:"),
      reply: reply(
        text("First the four tasks; the dependencies need their IDs."),
        toolUse("create_task", { subject: SCHEMA }),
        toolUse("create_task", { subject: API }),
        toolUse("create_task", { subject: TESTS }),
        toolUse("create_task", { subject: DOCS }),
      ),
    },
    {
      name: "phase 2: the edges, with the IDs create_task returned",
      when: lastResultStarts("Created"),
      sent: (request) => ({
        title: "the create_task results: the IDs exist only now",
        text: results(request).join("\n"),
      }),
      reply: (request) =>
        reply(
          toolUse("update_task", {
            task_id: idOf(request, API),
            addBlockedBy: [idOf(request, SCHEMA)],
          }),
          toolUse("update_task", {
            task_id: idOf(request, TESTS),
            addBlockedBy: [idOf(request, API)],
          }),
          toolUse("update_task", {
            task_id: idOf(request, DOCS),
            addBlockedBy: [idOf(request, SCHEMA)],
          }),
        ),
    },
    {
      name: "the graph is built",
      when: lastResultStarts("Updated"),
      reply: reply(
        text(
          "Four tasks: the schema comes first; endpoints and docs wait on it, tests on endpoints.",
        ),
      ),
    },
    {
      name: "claim the only startable task",
      when: said("Claim the first unblocked task"),
      reply: (request) => reply(toolUse("claim_task", { task_id: idOf(request, SCHEMA) })),
    },
    {
      name: "complete it",
      when: lastResultStarts("Claimed"),
      reply: (request) => reply(toolUse("complete_task", { task_id: idOf(request, SCHEMA) })),
    },
    {
      name: "report what it unblocked",
      when: lastResultStarts("Completed"),
      reply: reply(
        text("Schema done. Now startable: create API endpoints and write docs; tests still wait."),
      ),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
