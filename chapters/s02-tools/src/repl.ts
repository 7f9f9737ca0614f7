/**
 * The REPL (s01 §0.14–0.16, DESIGN §3): one line, one turn. Quit words, EOF and Ctrl-C
 * at the prompt end the session with status 0; blank lines re-prompt; slash commands are
 * handled here and never reach the model. An API error prints one red line and restores
 * the history to where it was before the turn, so the next request is valid.
 */
import type Anthropic from "@anthropic-ai/sdk";
import {
  describeApiError,
  isAbortError,
  killAll,
  type LineReader,
  type Printer,
  type SessionLog,
  type UsageMeter,
} from "shared";
import { type LoopResult, textOf } from "./loop.ts";

export const QUIT_WORDS = new Set(["q", "quit", "exit"]);

export interface SlashCommand {
  description: string;
  run(args: string): Promise<void>;
}

export interface ReplOptions {
  /** The prompt, e.g. `s01 >> `. */
  prompt: string;
  reader: LineReader;
  printer: Printer;
  usage: UsageMeter;
  log: SessionLog;
  model: string;
  history: Anthropic.MessageParam[];
  /** Runs one turn's loop over `history`. */
  runTurn(history: Anthropic.MessageParam[], signal: AbortSignal): Promise<LoopResult>;
  /**
   * Turns a typed line into the user message's content before it joins the history, or
   * returns null to drop the line (s04's UserPromptSubmit hooks). Absent: the line as is.
   */
  prepareLine?(line: string): Promise<string | Anthropic.ContentBlockParam[] | null>;
  commands?: Map<string, SlashCommand>;
}

export async function runRepl(options: ReplOptions): Promise<number> {
  const { reader, printer } = options;
  const commands = options.commands ?? new Map<string, SlashCommand>();
  // One iteration per event: typed lines now, other sources in later chapters.
  for (;;) {
    const event = await reader.next(printer.style.cyan(options.prompt));
    if (event.type === "eof" || event.type === "interrupt") return 0;
    if (event.type !== "line") continue;
    const line = event.text;
    const trimmed = line.trim();
    if (!trimmed) continue;
    if (QUIT_WORDS.has(trimmed.toLowerCase())) return 0;

    const slash = /^\/([A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/.exec(trimmed);
    if (slash) {
      try {
        await runSlash(slash[1]!, slash[2] ?? "", commands, printer);
      } catch (error) {
        // A failing command (s08's /compact calls the API) never ends the session.
        printer.line(describeApiError(error, options.model), "error");
      } finally {
        reader.idle();
      }
      continue;
    }
    const outcome = await runOneTurn(line, options);
    if (outcome === "interrupted") return 0;
  }
}

async function runSlash(
  name: string,
  args: string,
  commands: Map<string, SlashCommand>,
  printer: Printer,
): Promise<void> {
  const command = commands.get(name);
  if (command) return command.run(args);
  printer.line(`Unknown command /${name}`, "warn");
  const list = [...commands.entries()].map(([key, c]) => `/${key}: ${c.description}`);
  printer.line(list.length ? `Commands: ${list.join("; ")}` : "No slash commands in this chapter.");
}

async function runOneTurn(line: string, options: ReplOptions): Promise<"done" | "interrupted"> {
  const { history, printer, reader, usage, log } = options;
  const content = options.prepareLine ? await options.prepareLine(line) : line;
  if (content === null) {
    reader.idle();
    return "done";
  }
  // A copy of the messages, not a length: later chapters (s08) may rewrite the history
  // during a turn, and a failed turn must leave it exactly as it was.
  const before = history.slice();
  const controller = new AbortController();
  reader.onTurnInterrupt = () => {
    // Until s15 can cancel a turn, Ctrl-C kills the running command and ends the session.
    killAll();
    controller.abort();
  };
  usage.startTurn();
  history.push({ role: "user", content });
  log.transcript("USER", line);
  try {
    const result = await options.runTurn(history, controller.signal);
    const answer = textOf(result.response);
    log.transcript("ASSISTANT", answer);
    printer.line(answer);
    printer.line();
  } catch (error) {
    if (controller.signal.aborted || isAbortError(error)) {
      printer.line("Interrupted.", "warn");
      return "interrupted";
    }
    history.splice(0, history.length, ...before);
    const reason = describeApiError(error, options.model);
    log.transcript("ERROR", reason);
    printer.line(`${reason} (this turn was discarded; the conversation is as before it)`, "error");
  } finally {
    reader.onTurnInterrupt = null;
    reader.idle();
  }
  const usageLine = usage.formatTurn();
  if (usageLine) printer.line(usageLine, "dim");
  return "done";
}
