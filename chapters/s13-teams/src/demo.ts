/**
 * s13's offline demo: a lead and two teammates on one small task board.
 *
 *   hello.txt (alice)   bye.txt (bob, plan required)   index.txt (blocked by both)
 *
 * The lead creates the three tasks, adds the edges, spawns alice and bob on the first two
 * and ends its turn. alice writes hello.txt and reports; bob must plan first: the lead
 * rejects his first plan and approves the second. Every report reaches the lead as a
 * `[Team events]` turn (the demo prints one as the model receives it). When bob completes
 * bye.txt, index.txt is unblocked and whichever teammate is idle claims it from the board.
 * Then the lead asks both to shut down, and each answers the request by its ID.
 * Run: pnpm --filter s13 demo
 */
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";

type Request = Anthropic.MessageCreateParams;
const blocksOf = (request: Request): Anthropic.ContentBlockParam[] => {
  const content = request.messages.at(-1)?.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
};
const last = (request: Request) => JSON.stringify(request.messages.at(-1));
const results = (request: Request) =>
  blocksOf(request)
    .map((block) => (block.type === "tool_result" ? String(block.content) : ""))
    .join("\n");
const lastText = (request: Request) =>
  blocksOf(request)
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("\n");
const isLead = (request: Request) => !String(request.system).includes("\n\nYou are '");
const is = (name: string) => (request: Request) =>
  String(request.system).includes(`You are '${name}'`);
const isMate = (request: Request) => !isLead(request);
const events = (request: Request) =>
  isLead(request) && lastText(request).startsWith("[Team events]");
/** The ID of the task `subject` in anything the request carries. */
const idOf = (request: Request, subject: string) =>
  new RegExp(`(task_[0-9a-f]{8}):? (?:\\(p\\d+\\) )?${subject}`).exec(
    JSON.stringify(request),
  )?.[1] ?? "";
const assigned = (request: Request) =>
  /\[(?:Assigned|Auto-claimed) task (task_[0-9a-f]{8})\]/.exec(
    JSON.stringify(request.messages),
  )?.[1] ?? "";

const ASK =
  "With a team: alice writes hello.txt, bob writes bye.txt (with a plan first), then index.txt lists both.";
const HELLO = "write hello.txt";
const BYE = "write bye.txt";
const INDEX = "write index.txt";

/** The lead's answer to one `[Team events]` turn, from what the events say. */
function onEvents(request: Request) {
  const now = lastText(request);
  const plans = JSON.stringify(request.messages).split("[plan_approval_request").length - 1;
  const plan = /\[plan_approval_request request_id=(req_\d+)\]/.exec(now);
  if (plan && plans === 1) {
    return reply(
      text("The first plan does not say what bye.txt contains: rejected."),
      toolUse("review_plan", {
        request_id: plan[1],
        approve: false,
        feedback: "Say what the file contains: one line, 'Goodbye, world.'",
      }),
    );
  }
  if (plan) return reply(toolUse("review_plan", { request_id: plan[1], approve: true }));
  if (now.includes("index.txt written")) {
    return reply(
      text("All three files exist. Shutting the team down."),
      toolUse("request_shutdown", { teammate: "alice" }),
      toolUse("request_shutdown", { teammate: "bob" }),
    );
  }
  if (now.includes("[shutdown_response")) return reply(text("Shutdown confirmed."));
  return reply(text("Noted; the board goes on."));
}

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s13",
  shows:
    "a lead spawns two teammates on one task board; one plans first (rejected, then approved); their reports wake the lead; a shutdown handshake ends the team.",
  env: { TEAM_IDLE_SCAN_MS: "200" },
  prompts: [ASK],
  holdInputUntil: "[all teammates shut down]",
  script: [
    {
      name: "lead: create the three tasks",
      when: (r) => isLead(r) && last(r).includes(ASK),
      reply: reply(
        text("Three tasks: two in parallel, then the index."),
        toolUse("create_task", { subject: HELLO, description: "One line: Hello, world." }),
        toolUse("create_task", { subject: BYE, description: "One line of farewell." }),
        toolUse("create_task", { subject: INDEX, description: "List hello.txt and bye.txt." }),
      ),
    },
    {
      name: "lead: add the edges and spawn",
      when: (r) => isLead(r) && results(r).includes("Created"),
      reply: (r) =>
        reply(
          toolUse("update_task", {
            task_id: idOf(r, INDEX),
            addBlockedBy: [idOf(r, HELLO), idOf(r, BYE)],
          }),
          toolUse("spawn_teammate", {
            name: "alice",
            role: "writer",
            prompt: "Write the file your task names.",
            task_id: idOf(r, HELLO),
          }),
          toolUse("spawn_teammate", {
            name: "bob",
            role: "writer",
            prompt: "Write the file your task names.",
            task_id: idOf(r, BYE),
            require_plan: true,
          }),
        ),
    },
    {
      name: "lead: end the turn",
      when: (r) => isLead(r) && results(r).includes("spawned as"),
      reply: reply(text("alice and bob are on it. I end this turn; their events will wake me.")),
    },
    {
      name: "alice: hello.txt",
      when: (r) => is("alice")(r) && lastText(r).includes("[Assigned task"),
      reply: (r) =>
        reply(
          toolUse("write_file", { path: "hello.txt", content: "Hello, world.\n" }),
          toolUse("complete_task", { task_id: assigned(r) }),
        ),
    },
    {
      name: "alice: report",
      when: (r) => is("alice")(r) && results(r).includes("Completed"),
      reply: reply(text("hello.txt written.")),
    },
    {
      name: "bob: first plan",
      when: (r) => is("bob")(r) && lastText(r).includes("[Plan required]"),
      reply: reply(toolUse("submit_plan", { plan: "Write bye.txt." })),
    },
    {
      name: "bob: wait for the decision",
      when: (r) => is("bob")(r) && results(r).startsWith("Plan submitted"),
      reply: reply(text("Plan submitted; waiting for lead.")),
    },
    {
      name: "bob: second plan",
      when: (r) => is("bob")(r) && lastText(r).includes("[Plan rejected]"),
      reply: reply(toolUse("submit_plan", { plan: "Write bye.txt containing 'Goodbye, world.'" })),
    },
    {
      name: "bob: wait again",
      when: (r) => is("bob")(r) && results(r).startsWith("Plan submitted"),
      reply: reply(text("Revised plan submitted.")),
    },
    {
      name: "bob: bye.txt",
      when: (r) => is("bob")(r) && lastText(r).includes("[Plan approved]"),
      reply: (r) =>
        reply(
          toolUse("write_file", { path: "bye.txt", content: "Goodbye, world.\n" }),
          toolUse("complete_task", { task_id: assigned(r) }),
        ),
    },
    {
      name: "bob: report",
      when: (r) => is("bob")(r) && results(r).includes("Completed"),
      reply: reply(text("bye.txt written; index.txt is unblocked.")),
    },
    {
      name: "a teammate: index.txt from the board",
      when: (r) => isMate(r) && lastText(r).includes("[Auto-claimed task"),
      reply: (r) =>
        reply(
          toolUse("write_file", { path: "index.txt", content: "hello.txt\nbye.txt\n" }),
          toolUse("complete_task", {
            task_id: /\[Auto-claimed task (task_[0-9a-f]{8})\]/.exec(lastText(r))?.[1] ?? "",
          }),
        ),
    },
    {
      name: "a teammate: index report",
      when: (r) => isMate(r) && results(r).includes("Completed"),
      reply: reply(text("index.txt written.")),
    },
    {
      name: "lead: the first team events, shown as sent",
      when: events,
      sent: (r) => ({
        title: "a team-event turn: one user message the runtime wrote from the lead's mailbox",
        text: lastText(r),
      }),
      reply: onEvents,
    },
    // Later team-event turns: how many depends on when each report arrives.
    ...Array.from({ length: 12 }, (_, i) => ({
      name: `lead: team events ${i + 2}`,
      when: events,
      reply: onEvents,
    })),
    ...Array.from({ length: 6 }, (_, i) => ({
      name: `lead: after its team tools ${i + 1}`,
      when: (r: Request) =>
        isLead(r) && /^(Plan (approved|rejected)|Shutdown requested)/m.test(results(r)),
      reply: reply(text("Done; waiting for the team.")),
    })),
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
