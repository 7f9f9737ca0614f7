/**
 * The REPL: one event, one turn. Everything arrives through the line reader's one queue:
 * typed lines, and events of the sources mechanisms register (each event kind is handed
 * to the source that registered it). Quit words, EOF and Ctrl-C at the prompt end
 * the session with status 0; blank lines re-prompt; slash commands are handled here and
 * never reach the model (`/help`, or an unknown name, lists them). A plugin's `/kit:name`
 * also answers to `/name` when no other command has that name.
 *
 * A turn's lifecycle, each step a seam mechanisms can join:
 *
 *   prepare      user turns only: may rewrite the typed line's message, or drop the line
 *   beforeTurn   the history holds the new user message
 *   run          the loop, to its final reply (the loop shows each reply as it arrives)
 *   afterTurn    after a normal end only
 *   usage line
 *
 * An API error prints one red line and restores the history to where it was before the
 * turn, so the next request is valid. Ctrl-C during a turn (s15, the one chapter that edits
 * this file: chapters/edits.json) cancels that turn, keeps it repaired (interrupt.ts) and
 * goes on to the next event.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  describeApiError,
  isAbortError,
  type LineReader,
  type Printer,
  type SessionLog,
  type UsageMeter,
} from "shared";
import {
  type EventSource,
  type LoopResult,
  type SlashCommand,
  sourcesByKind,
  type Turn,
  type TurnHooks,
  type TurnInput,
  tagOrigin,
} from "./contract.ts";
import { appendInput, repairInterrupted } from "./interrupt.ts";
import { textOf } from "./loop.ts";

export const QUIT_WORDS = new Set(["q", "quit", "exit"]);

type MessageParam = Anthropic.MessageParam;

export interface ReplOptions {
  /** The prompt, e.g. `s01 >> `. */
  prompt: string;
  reader: LineReader;
  printer: Printer;
  usage: UsageMeter;
  log: SessionLog;
  model: string;
  history: MessageParam[];
  /** Runs one turn's loop over `turn.history`. */
  runTurn(turn: Turn): Promise<LoopResult>;
  hooks?: TurnHooks[];
  commands?: Map<string, SlashCommand>;
  sources?: EventSource[];
}

export async function runRepl(options: ReplOptions): Promise<number> {
  const { reader, printer } = options;
  const commands = options.commands ?? new Map<string, SlashCommand>();
  const sources = sourcesByKind(options.sources ?? []);
  for (const source of sources.values()) {
    source.start?.((text) => reader.push({ type: "external", kind: source.kind, text }));
  }
  let lastRequest = "";
  // One iteration per event: a typed line, or an event from a mechanism's source.
  for (;;) {
    const event = await reader.next(printer.style.cyan(options.prompt));
    if (event.type === "eof" || event.type === "interrupt") return 0;
    let input: TurnInput | null | undefined = null;
    if (event.type === "external") {
      const source = sources.get(event.kind);
      if (!source) options.log.record("event", { unknown: event.kind, text: event.text });
      else input = await source.turn(event.text);
    } else {
      const line = event.text;
      const trimmed = line.trim();
      if (!trimmed) continue;
      if (QUIT_WORDS.has(trimmed.toLowerCase())) return 0;
      const slash = /^\/([A-Za-z][\w-]*(?::[A-Za-z][\w-]*)?)(?:\s+([\s\S]*))?$/.exec(trimmed);
      input = slash
        ? await runSlash(slash[1]!, slash[2] ?? "", commands, options, lastRequest)
        : { kind: "user", request: line, content: line };
    }
    if (!input) {
      reader.idle();
      continue;
    }
    if (input.kind === "user") input = await prepare(input, options);
    if (!input) {
      reader.idle();
      continue;
    }
    lastRequest = input.request;
    await runOneTurn(input, options);
  }
}

async function runSlash(
  name: string,
  args: string,
  commands: Map<string, SlashCommand>,
  options: ReplOptions,
  request: string,
): Promise<TurnInput | undefined> {
  const { printer, usage } = options;
  // `/name` finds `/kit:name` when it is the only such command (never for /help).
  const plain = [...commands.keys()].filter((key) => name !== "help" && key.endsWith(`:${name}`));
  const command = commands.get(name) ?? (plain.length === 1 ? commands.get(plain[0]!) : undefined);
  if (!command) {
    if (plain.length > 1) {
      printer.line(`/${name} is ambiguous: ${plain.map((key) => `/${key}`).join(", ")}`, "warn");
    } else if (name !== "help") printer.line(`Unknown command /${name}`, "warn");
    // Every command, the project's own and the user's among them, with its arguments.
    const list = [...commands.entries()].map(
      ([key, c]) => `  /${key}${c.hint ? ` ${c.hint}` : ""}: ${c.description}`,
    );
    printer.line(
      list.length ? `Commands:\n${list.join("\n")}` : "No slash commands in this chapter.",
    );
    return undefined;
  }
  const controller = new AbortController();
  options.reader.onTurnInterrupt = () => controller.abort();
  usage.startTurn();
  try {
    return await command.run(args, {
      history: options.history,
      request,
      signal: controller.signal,
    });
  } catch (error) {
    // A failing command (one may call the API) never ends the session.
    printer.line(describeApiError(error, options.model), "error");
    return undefined;
  } finally {
    options.reader.onTurnInterrupt = null;
    // A command that called the model shows what it spent.
    const spent = usage.formatTurn();
    if (spent) printer.line(spent, "dim");
  }
}

/** Runs every prepare hook in list order; the first null drops the input. */
async function prepare(input: TurnInput, options: ReplOptions): Promise<TurnInput | null> {
  let current = input;
  for (const hooks of options.hooks ?? []) {
    if (!hooks.prepare) continue;
    const next = await hooks.prepare(current);
    if (!next) return null;
    current = next;
  }
  return current;
}

async function runOneTurn(input: TurnInput, options: ReplOptions): Promise<void> {
  const { history, printer, reader, usage, log } = options;
  // A copy of the messages, not a length: a mechanism may rewrite the history
  // during a turn, and a failed turn must leave it exactly as it was.
  const before = history.slice();
  const controller = new AbortController();
  // Ctrl-C cancels this turn only: its signal stops the model call, the foreground
  // command, a subagent, an MCP call (interrupt.ts); the session goes on.
  reader.onTurnInterrupt = () => controller.abort();
  usage.startTurn();
  // After an interrupted turn the history ends with a user message: the input joins it.
  tagOrigin(appendInput(history, input.content), "input");
  log.transcript(input.kind === "user" ? "USER" : `INPUT (${input.kind})`, input.request);
  const turn: Turn = { ...input, history, signal: controller.signal };
  let result: LoopResult | null = null;
  try {
    for (const hooks of options.hooks ?? []) await hooks.beforeTurn?.(turn);
    result = await options.runTurn(turn);
    // The loop showed the answer as it arrived; the turn ends with a blank line.
    log.transcript("ASSISTANT", textOf(result.response));
    printer.line();
    for (const hooks of options.hooks ?? []) await hooks.afterTurn?.(turn, result);
  } catch (error) {
    const reason = describeApiError(error, options.model);
    if (controller.signal.aborted || isAbortError(error)) {
      // The turn is kept, repaired so the next request is valid.
      repairInterrupted(history);
      log.transcript("INTERRUPTED", "the user pressed Ctrl-C during the turn");
      printer.line("[interrupted]", "warn");
    } else if (result === null) {
      history.splice(0, history.length, ...before);
      log.transcript("ERROR", reason);
      printer.line(
        `${reason} (this turn was discarded; the conversation is as before it)`,
        "error",
      );
    } else {
      // The answer stands; only an after-turn step failed.
      log.transcript("ERROR", reason);
      printer.line(reason, "error");
    }
  } finally {
    reader.onTurnInterrupt = null;
    reader.idle();
  }
  const usageLine = usage.formatTurn();
  if (usageLine) printer.line(usageLine, "dim");
}
