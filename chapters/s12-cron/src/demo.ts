/**
 * s12's offline demo: the clock starts a second and a half before 09:00. The agent reads
 * the time from its prompt and schedules a one-shot reminder for 09:00; at 09:00 the tick
 * finds it due, and once the agent is idle a scheduled turn delivers `[Scheduled] <prompt>`
 * (the demo prints that message as the model receives it). The job is acknowledged by the
 * turn's first response, so when the model looks, it is gone.
 * Run: pnpm --filter s12 demo
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
const resultOf = (request: Request) => {
  const block = blocksOf(request)[0];
  return block?.type === "tool_result" ? String(block.content) : "";
};
const isScheduled = (request: Request) =>
  blocksOf(request).some((block) => block.type === "text" && block.text.startsWith("[Scheduled]"));

const ASK = "Remind me at 9:00 to stretch. Just once.";
const LOOK = "What is scheduled?";
const REMINDER = "Time to stretch: stand up, roll your shoulders, look away from the screen.";
const DONE = "(The one-shot job is gone: it was acknowledged by this turn's first response.)";

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s12",
  shows:
    "a one-shot job for the next minute becomes due, waits for an idle agent, and runs as a scheduled turn.",
  env: { HARNESS_CLOCK_START: "2026-03-02T08:59:58.500" },
  prompts: [ASK, LOOK],
  // The scheduled turn comes after the typed lines: the input stays open until it is done.
  holdInputUntil: DONE,
  script: [
    {
      name: "read the clock line and schedule the reminder",
      when: (r) => last(r).includes(ASK),
      sent: (r) => ({
        title: "the system prompt ends with the clock, rebuilt for every turn",
        text: String(r.system)
          .split("\n\n")
          .filter((s) => s.startsWith("Scheduling:") || s.startsWith("Current local time:"))
          .join("\n"),
      }),
      reply: reply(
        text("It is 08:59, so the next 9:00 is in a minute: a one-shot job for 0 9 * * *."),
        toolUse("schedule_cron", { cron: "0 9 * * *", prompt: REMINDER, recurring: false }),
      ),
    },
    {
      name: "confirm",
      when: (r) => resultOf(r).startsWith("Scheduled cron_"),
      reply: reply(text("Done: you get the reminder at 9:00, once.")),
    },
    {
      name: "list the jobs",
      when: (r) => last(r).includes(LOOK),
      reply: reply(toolUse("list_crons", {})),
    },
    {
      name: "describe the list",
      when: (r) => resultOf(r).includes("[one-shot, durable]"),
      reply: reply(text("One job: the stretch reminder at 9:00, one-shot, kept in .harness/.")),
    },
    {
      name: "the scheduled turn",
      when: isScheduled,
      sent: (r) => ({
        title: "the scheduled turn: one user message, one text block per due job",
        text: blocksOf(r)
          .map((block) => (block.type === "text" ? `[text] ${block.text}` : `[${block.type}]`))
          .join("\n"),
      }),
      reply: reply(text("Stretch time. Checking the reminder is done:"), toolUse("list_crons", {})),
    },
    {
      name: "the job is gone",
      when: (r) => resultOf(r) === "No cron jobs.",
      reply: reply(text(`${REMINDER}\n${DONE}`)),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
