/**
 * s17's offline demo: a goal that the evaluator turns down twice before it agrees.
 *
 *   /goal tests/smoke.sh prints OK ──> a turn on the condition ──> "Done." with no evidence
 *        ──> [goal] block: no output of the script ──> the model runs it (it fails) ──> block
 *        ──> the model fixes the script and runs it again ──> [goal] achieved
 *   /goal ──> the status: achieved, and why
 * Run: pnpm --filter s17 demo
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { runIfEntry } from "shared";
import { type DemoOptions, reply, runDemo, text, toolUse } from "shared/testing";
import { EVALUATOR_SYSTEM } from "./goal-evaluator.ts";

type Request = Anthropic.MessageCreateParams;

const CONDITION = "tests/smoke.sh prints OK";
const systemText = (r: Request) =>
  typeof r.system === "string" ? r.system : (r.system ?? []).map((b) => b.text).join("");
const isEvaluator = (r: Request) => systemText(r) === EVALUATOR_SYSTEM;
const lastText = (r: Request) => JSON.stringify(r.messages.at(-1)?.content ?? "");
const verdict = (ok: boolean, reason: string) =>
  reply(text(JSON.stringify({ ok, reason, impossible: false })));
const evaluation = (r: Request) => ({
  title: "the evaluator reads (no tools, max_tokens)",
  text: String(r.max_tokens),
});

export const DEMO: Omit<DemoOptions, "main"> = {
  chapter: "s17",
  shows:
    "a goal the evaluator turns down twice (no evidence, then a failing script) before it agrees, with each verdict on its own line and the status at the end.",
  prompts: [`/goal ${CONDITION}`, "/goal"],
  setup(workdir) {
    mkdirSync(path.join(workdir, "tests"), { recursive: true });
    writeFileSync(path.join(workdir, "tests", "smoke.sh"), 'echo "NOT OK"\nexit 1\n');
  },
  script: [
    {
      name: "no evidence yet",
      when: (r) => isEvaluator(r) && !JSON.stringify(r.messages).includes("[tool_result"),
      sent: evaluation,
      reply: verdict(false, "the conversation shows no output of tests/smoke.sh"),
    },
    {
      name: "the script failed",
      when: (r) => isEvaluator(r) && JSON.stringify(r.messages).includes("NOT OK"),
      reply: verdict(false, "tests/smoke.sh printed NOT OK and exited with status 1"),
    },
    {
      name: "the script passed",
      when: isEvaluator,
      reply: verdict(true, "tests/smoke.sh printed OK"),
    },
    {
      name: "a first answer, without evidence",
      when: (r) => lastText(r) === JSON.stringify(CONDITION),
      reply: reply(text("Done: the smoke test is fine.")),
    },
    {
      name: "run the script",
      when: (r) => lastText(r).includes("shows no output"),
      reply: reply(toolUse("bash", { command: "sh tests/smoke.sh" })),
    },
    {
      name: "it fails: say so",
      when: (r) => lastText(r).includes("NOT OK"),
      reply: reply(text("The script prints NOT OK.")),
    },
    {
      name: "fix it and run it again",
      when: (r) => lastText(r).includes("exited with status 1"),
      reply: reply(
        toolUse("bash", {
          command: "printf 'echo OK\\n' > tests/smoke.sh && sh tests/smoke.sh",
        }),
      ),
    },
    {
      name: "report the evidence",
      when: (r) => lastText(r).includes('"OK'),
      reply: reply(text("Fixed: `sh tests/smoke.sh` now prints OK.")),
    },
  ],
};

runIfEntry(import.meta.url, async (io) =>
  runDemo(io, { ...DEMO, main: (await import("./main.ts")).main }),
);
