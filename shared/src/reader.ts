/**
 * The one line reader of the process (docs/architecture.md, "Turns and the REPL").
 *
 * Everything the REPL reacts to arrives through one FIFO of events: typed lines now,
 * scheduler, inbox and wake events from later chapters. Lines that arrive while the
 * agent works are queued, never dropped, so piped input and type-ahead both work.
 * Ctrl-C is routed by state: at the prompt it ends the session, during a turn it calls
 * the turn's interrupt handler, during an approval question it answers "no".
 */
import readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import type { Printer } from "./printer.ts";

export type InputEvent =
  | { type: "line"; text: string }
  | { type: "eof" }
  | { type: "interrupt" }
  /** Events later chapters inject (cron fires, teammate messages, wake-ups). */
  | { type: "external"; kind: string; text: string };

type State = "idle" | "prompt" | "turn" | "question";

export interface LineReaderOptions {
  input: Readable & { isTTY?: boolean };
  output: Writable;
  printer: Printer;
  /** Overrides the TTY detection (tests inject a "terminal"). */
  terminal?: boolean;
}

export class LineReader {
  readonly isTTY: boolean;
  /** Called on Ctrl-C while a turn runs (set by the REPL for each turn). */
  onTurnInterrupt: (() => void) | null = null;

  private readonly rl: readline.Interface;
  private readonly output: Writable;
  private readonly printer: Printer;
  private readonly queue: InputEvent[] = [];
  private waiter: ((event: InputEvent) => void) | null = null;
  private answer: ((text: string | null) => void) | null = null;
  private state: State = "idle";
  private promptText = "";
  private ended = false;

  constructor(options: LineReaderOptions) {
    this.isTTY = options.terminal ?? options.input.isTTY === true;
    this.output = options.output;
    this.printer = options.printer;
    this.rl = readline.createInterface({
      input: options.input,
      output: this.isTTY ? options.output : undefined,
      terminal: this.isTTY,
      historySize: this.isTTY ? 100 : 0,
    });
    this.rl.on("line", (text) => this.receive({ type: "line", text }));
    this.rl.on("close", () => {
      this.ended = true;
      this.receive({ type: "eof" });
    });
    this.rl.on("SIGINT", () => this.interrupt());
    this.printer.attachPrompt({
      clear: () => {
        if (!this.promptOnScreen) return;
        this.output.write(this.isTTY ? "\r\x1b[2K" : "\n");
      },
      redraw: () => {
        if (!this.promptOnScreen) return;
        // In a terminal, readline rewrites its prompt and the half-typed line.
        if (this.readlineDrawsPrompt) this.rl.prompt(true);
        else this.output.write(this.promptText);
      },
    });
  }

  /**
   * Shows `prompt` and resolves with the next event; the REPL is then in a turn. Without a
   * terminal the prompt is written only with the line it answers, so piped input (the
   * demos, CI) shows `s01 >> <line>` and no prompt that nothing will ever answer.
   */
  async next(prompt: string): Promise<InputEvent> {
    const queued = this.queue.shift();
    this.promptText = prompt;
    if (this.isTTY) this.show(prompt);
    const event = queued ?? (this.ended ? { type: "eof" } : await this.wait());
    if (!this.isTTY) {
      if (event.type === "line") this.output.write(`${prompt}${event.text}\n`);
    } else if (event.type !== "line") this.output.write("\n");
    this.state = "turn";
    return event;
  }

  /**
   * Asks a question on the same reader (approvals). Only a line typed after the question
   * answers it; lines queued earlier stay for the REPL. Resolves null on EOF or Ctrl-C.
   */
  ask(question: string): Promise<string | null> {
    if (this.ended) return Promise.resolve(null);
    const previous = this.state;
    this.state = "question";
    this.show(question);
    return new Promise((resolve) => {
      this.answer = (text) => {
        this.answer = null;
        this.state = previous;
        if (text !== null && !this.isTTY) this.output.write(`${text}\n`);
        if (text === null) this.output.write("\n");
        resolve(text);
      };
    });
  }

  /** Adds an event from elsewhere in the harness (later chapters' background sources). */
  push(event: InputEvent): void {
    this.receive(event);
  }

  /** Ctrl-C, routed by state. */
  interrupt(): void {
    if (this.state === "question" && this.answer) this.answer(null);
    else if (this.state === "turn") this.onTurnInterrupt?.();
    else this.receive({ type: "interrupt" });
  }

  /** Marks the end of a turn (the prompt is not shown yet). */
  idle(): void {
    this.state = "idle";
  }

  close(): void {
    // Closing twice is a no-op today, but the reader keeps off a closed interface entirely.
    if (!this.ended) this.rl.close();
  }

  /** A prompt or question is showing (piped input shows the REPL's prompt only with its line). */
  private get promptOnScreen(): boolean {
    return this.state === "question" || (this.state === "prompt" && this.isTTY);
  }

  /**
   * Readline draws the prompt only in a terminal and only while it is open: EOF (Ctrl-D at
   * an approval) closes it before the REPL shows its last prompt, and Node 24 throws
   * ERR_USE_AFTER_CLOSE from prompt() on a closed interface (20 and 22 still draw it).
   * Once closed there is no line to edit, so a plain write shows the same prompt.
   */
  private get readlineDrawsPrompt(): boolean {
    return this.isTTY && !this.ended;
  }

  /** Writes a prompt; in a terminal readline owns it, so line editing redraws it right. */
  private show(prompt: string): void {
    this.promptText = prompt;
    if (this.readlineDrawsPrompt) {
      this.rl.setPrompt(prompt);
      this.rl.prompt(true);
    } else {
      this.output.write(prompt);
    }
  }

  private receive(event: InputEvent): void {
    if (this.answer && event.type === "line") {
      this.answer(event.text);
      return;
    }
    if (this.answer && event.type === "eof") this.answer(null);
    if (this.waiter) {
      const resolve = this.waiter;
      this.waiter = null;
      resolve(event);
      return;
    }
    this.queue.push(event);
  }

  private wait(): Promise<InputEvent> {
    this.state = "prompt";
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}
