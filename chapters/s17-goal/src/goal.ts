/**
 * The goal (s17): a completion condition the user sets with `/goal <condition>`, checked by
 * an independent evaluator (goal-evaluator.ts) each time the agent stops calling tools.
 *
 *   /goal <condition> ──> the goal is set, and a turn starts with the condition as its input
 *   the model stops calling tools ──> the gate, before the Stop hooks:
 *        no goal                         allow    (the turn ends as in s01)
 *        a background job or teammate    defer    (no evaluation; its wake comes back here)
 *        evaluator: ok                   achieved (the goal is done and cleared)
 *        evaluator: impossible           failed   (cleared)
 *        evaluator: not yet              block    (four lines as a user message; the loop goes on)
 *        more than GOAL_BLOCK_CAP blocks limit    (the goal stays; the turn ends)
 *        prose, bad JSON, an API error   error    (the goal stays; never "done")
 *
 * Every change of the goal is one `goal_status` line in `<WORKDIR>/.harness/goal.jsonl`; an
 * active goal is restored when the harness starts again.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  appendLine,
  asObject,
  ConfigError,
  harnessPath,
  isAbortError,
  positiveIntVar,
  readJournal,
  readVar,
} from "shared";
import type { LoopSeams, Mechanism } from "./contract.ts";
import {
  type Evaluator,
  GoalError,
  type GoalEvaluation,
  modelEvaluator,
} from "./goal-evaluator.ts";
import type { Harness } from "./harness.ts";
import type { PromptSection } from "./prompt.ts";

type MessageParam = Anthropic.MessageParam;

export const GOAL_MAX_CHARS = 4000;
export const DEFAULT_BLOCK_CAP = 8;
export const GOAL_FILE = "goal.jsonl";
export const CLEAR_WORDS = ["clear", "stop", "off", "reset", "none", "cancel"];

// ---------------------------------------------------------------------------------------
// The goal and its record

export interface GoalRecord {
  type: "goal_status";
  condition: string;
  active: boolean;
  met: boolean;
  failed: boolean;
  reason: string;
  iterations: number;
  /** Seconds since the goal was set. */
  duration: number;
}

interface Goal {
  condition: string;
  iterations: number;
  setAt: number;
  tokensAtStart: number;
  lastReason: string | null;
}

export type StopAction = "allow" | "block" | "achieved" | "failed" | "limit" | "defer" | "error";

export interface StopDecision {
  action: StopAction;
  reason: string;
}

export interface ControllerOptions {
  /** `<WORKDIR>/.harness/goal.jsonl`, or null to keep the records in memory only (tests). */
  file: string | null;
  evaluator: Evaluator;
  blockCap?: number;
  now?: () => number;
}

export class GoalController {
  readonly records: GoalRecord[] = [];
  private goal: Goal | null = null;
  private blocks = 0;
  private readonly blockCap: number;
  private readonly now: () => number;
  private readonly options: ControllerOptions;

  constructor(options: ControllerOptions) {
    this.options = options;
    this.blockCap = options.blockCap ?? DEFAULT_BLOCK_CAP;
    if (!Number.isInteger(this.blockCap) || this.blockCap < 1)
      throw new GoalError("the goal's block cap must be a whole number of at least 1");
    this.now = options.now ?? Date.now;
  }

  get condition(): string | null {
    return this.goal?.condition ?? null;
  }

  private record(fields: Pick<GoalRecord, "active" | "met" | "failed" | "reason">, goal: Goal) {
    const record: GoalRecord = {
      type: "goal_status",
      condition: goal.condition,
      ...fields,
      iterations: goal.iterations,
      duration: Math.floor((this.now() - goal.setAt) / 1000),
    };
    this.records.push(record);
    if (this.options.file) appendLine(this.options.file, JSON.stringify(record));
  }

  setGoal(text: string, tokens: number): string {
    const condition = text.trim();
    if (condition === "") throw new GoalError("goal condition cannot be empty");
    if (condition.length > GOAL_MAX_CHARS)
      throw new GoalError(`goal condition cannot exceed ${GOAL_MAX_CHARS} characters`);
    const old = this.goal;
    if (old)
      this.record(
        { active: false, met: false, failed: false, reason: "replaced by a new goal" },
        old,
      );
    this.goal = {
      condition,
      iterations: 0,
      setAt: this.now(),
      tokensAtStart: tokens,
      lastReason: null,
    };
    this.blocks = 0;
    this.record({ active: true, met: false, failed: false, reason: "goal set" }, this.goal);
    return condition;
  }

  clear(reason = "cleared"): string {
    const goal = this.goal;
    if (!goal) return "No goal set";
    this.record({ active: false, met: false, failed: false, reason }, goal);
    this.goal = null;
    this.blocks = 0;
    return `Goal cleared: ${goal.condition}`;
  }

  /** A new turn the user (or a wake) started: consecutive blocks count from zero again. */
  beginQuery(): void {
    this.blocks = 0;
  }

  status(tokens: number): string {
    const goal = this.goal;
    if (goal) {
      return [
        `Goal active: ${goal.condition}`,
        `Elapsed: ${Math.floor((this.now() - goal.setAt) / 1000)}s`,
        `Evaluations: ${goal.iterations}`,
        `Tokens: ${Math.max(0, tokens - goal.tokensAtStart)}`,
        ...(goal.lastReason ? [`Last reason: ${goal.lastReason}`] : []),
      ].join("\n");
    }
    const last = this.records.at(-1);
    if (last?.met) return `Goal achieved: ${last.condition}\nReason: ${last.reason}`;
    if (last?.failed) return `Goal failed: ${last.condition}\nReason: ${last.reason}`;
    return "No goal set";
  }

  /** The gate at the loop's no-tool_use exit. */
  async evaluate(messages: MessageParam[], busy: boolean): Promise<StopDecision> {
    const goal = this.goal;
    if (!goal) return { action: "allow", reason: "" };
    if (busy) return { action: "defer", reason: "background work is still running" };
    let evaluation: GoalEvaluation;
    try {
      evaluation = await this.options.evaluator(goal.condition, messages);
    } catch (error) {
      // Ctrl-C during the evaluation ends the turn: no evaluation, no record.
      if (isAbortError(error)) throw error;
      const reason = `${(error as Error).name}: ${(error as Error).message}`;
      goal.lastReason = reason;
      this.record({ active: true, met: false, failed: false, reason }, goal);
      return { action: "error", reason };
    }
    goal.iterations++;
    goal.lastReason = evaluation.reason;
    if (evaluation.ok) {
      this.record({ active: false, met: true, failed: false, reason: evaluation.reason }, goal);
      this.goal = null;
      this.blocks = 0;
      return { action: "achieved", reason: evaluation.reason };
    }
    if (evaluation.impossible) {
      this.record({ active: false, met: false, failed: true, reason: evaluation.reason }, goal);
      this.goal = null;
      this.blocks = 0;
      return { action: "failed", reason: evaluation.reason };
    }
    this.blocks++;
    this.record({ active: true, met: false, failed: false, reason: evaluation.reason }, goal);
    if (this.blocks > this.blockCap) {
      return {
        action: "limit",
        reason: `goal remains active, but the Stop hook blocked ${this.blockCap} consecutive turns`,
      };
    }
    return { action: "block", reason: evaluation.reason };
  }

  /**
   * Revives the goal the record file says is active (iterations 0, elapsed from now).
   * Achieved, failed and cleared goals stay ended. A corrupt line restores nothing.
   */
  restore(): { restored: string | null; problem: string | null } {
    const file = this.options.file;
    if (!file) return { restored: null, problem: null };
    const read = readJournal(file);
    if (read.badLines.length > 0 || read.tornTail) {
      const where = read.badLines.length ? `line ${read.badLines[0]}` : "its last line";
      return {
        restored: null,
        problem: `${file}: ${where} is not a goal record; no goal restored`,
      };
    }
    const last = [...read.records].reverse().find((r) => asObject(r)?.type === "goal_status") as
      | GoalRecord
      | undefined;
    if (last) this.records.push(last);
    if (!last?.active || typeof last.condition !== "string")
      return { restored: null, problem: null };
    this.goal = {
      condition: last.condition,
      iterations: 0,
      setAt: this.now(),
      tokensAtStart: 0,
      lastReason: null,
    };
    return { restored: last.condition, problem: null };
  }
}

/** The user message a block appends: four lines, then the loop goes on. */
export function blockMessage(condition: string, reason: string): string {
  return [
    "[Goal still active]",
    `Condition: ${condition}`,
    `Evaluator: ${reason}`,
    "Continue working and surface the missing evidence.",
  ].join("\n");
}

/** What `/goal <args>` asks for. */
export function parseGoalCommand(
  args: string,
): { kind: "status" } | { kind: "clear" } | { kind: "set"; condition: string } {
  const text = args.trim();
  if (text === "") return { kind: "status" };
  if (CLEAR_WORDS.includes(text.toLowerCase())) return { kind: "clear" };
  return { kind: "set", condition: text };
}

export function goalFile(workdir: string): string {
  return harnessPath(workdir, GOAL_FILE);
}

// ---------------------------------------------------------------------------------------
// The mechanism

/** GOAL_MAX_TURNS: model calls in one goal-driven turn; unset or 0 is no cap. */
function maxTurnsVar(env: Harness["env"]): number | null {
  const raw = readVar(env, "GOAL_MAX_TURNS");
  if (raw === undefined || raw === "0") return null;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new ConfigError(`GOAL_MAX_TURNS must be a whole number, 0 for no cap (got '${raw}')`);
  return Number(raw);
}

export function goalSection(condition: string): PromptSection {
  return {
    id: "goal",
    text:
      `Goal: ${condition}. When you stop, an independent evaluator with no tools checks it ` +
      "from this conversation alone, so end with concrete evidence (commands you ran and " +
      "their output).",
    dynamic: true,
  };
}

export interface GoalOptions {
  /**
   * True while work whose result is still to come runs; default: any mechanism's `busy`
   * (background jobs, teammates at work).
   */
  busy?: () => boolean;
}

export function goalMechanism(
  harness: Pick<Harness, "workdir" | "env" | "client" | "model" | "printer" | "usage" | "busy">,
  options: GoalOptions = {},
): Mechanism {
  const blockCap = positiveIntVar(harness.env, "GOAL_BLOCK_CAP", DEFAULT_BLOCK_CAP);
  const maxTurns = maxTurnsVar(harness.env);
  const evaluatorModel = readVar(harness.env, "GOAL_EVALUATOR_MODEL_ID") ?? harness.model;
  let signal: AbortSignal | undefined;
  const controller = new GoalController({
    file: goalFile(harness.workdir),
    blockCap,
    evaluator: modelEvaluator(
      harness.client,
      () => evaluatorModel,
      () => signal,
    ),
  });
  const say = (text: string) => harness.printer.line(text, "dim");
  const workerTokens = () => {
    const main = harness.usage.sessionByScope().get("main");
    return main ? main.input + main.output : 0;
  };
  // `/goal <condition>` waits for UserPromptSubmit: the goal is set once its turn starts.
  let pending: string | null = null;
  let calls = 0;
  const seams: LoopSeams = {
    async beforeModelCall() {
      calls++;
    },
    async beforeStop(messages, response, run) {
      if (controller.condition === null) return null;
      // A reply cut off at max_tokens is no finished answer: the gate stands aside, so the
      // recovery layer's continuation goes out, and judges the reply that really ends.
      if (response.stop_reason === "max_tokens") {
        say("[goal] not judged: the reply was cut off at max_tokens");
        return null;
      }
      signal = run.signal;
      if (maxTurns !== null && calls >= maxTurns) {
        say("[goal] max_turns: global max_turns reached; the goal remains active");
        return null;
      }
      const condition = controller.condition;
      const busy = options.busy ?? (() => harness.busy());
      const decision = await controller.evaluate(messages, busy());
      if (decision.action === "allow") return null;
      say(`[goal] ${decision.action}: ${decision.reason}`);
      return decision.action === "block" ? blockMessage(condition, decision.reason) : null;
    },
  };
  return {
    name: "goal",
    sections: (role) => {
      const condition = controller.condition;
      return role === "main" && condition !== null ? [goalSection(condition)] : [];
    },
    loop: (run) => (run.role === "main" ? seams : null),
    commands: {
      goal: {
        description:
          "set a goal the turn works toward until an evaluator agrees (/goal <condition>), show it (/goal), or end it (/goal clear)",
        run: async (args) => {
          const asked = parseGoalCommand(args);
          if (asked.kind === "status") harness.printer.line(controller.status(workerTokens()));
          else if (asked.kind === "clear") harness.printer.line(controller.clear());
          else {
            if (asked.condition.length > GOAL_MAX_CHARS) {
              harness.printer.line(
                `[goal] goal condition cannot exceed ${GOAL_MAX_CHARS} characters`,
                "warn",
              );
              return undefined;
            }
            pending = asked.condition;
            return { kind: "user", request: asked.condition, content: asked.condition };
          }
          return undefined;
        },
      },
    },
    turn: {
      async prepare(input) {
        if (pending !== null && input.request === pending) {
          controller.setGoal(pending, workerTokens());
          say(`[goal] set: ${pending}`);
        }
        pending = null;
        return input;
      },
      async beforeTurn() {
        controller.beginQuery();
        calls = 0;
      },
    },
    start: () => {
      const { restored, problem } = controller.restore();
      if (problem) return [{ text: `[goal] ${problem}`, tone: "warn" }];
      return restored ? [{ text: `[goal] restored: ${restored}`, tone: "dim" }] : [];
    },
  };
}
