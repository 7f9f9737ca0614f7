/**
 * The terminal side of the harness: renders loop events, one line at a
 * time, each carrying its scope's prefix, and keeps an open prompt intact when a line
 * arrives while the user is typing (background output from later chapters).
 */
import type { Writable } from "node:stream";
import type { LoopEvent, Tone } from "./events.ts";
import { createStyle, type Style } from "./style.ts";

export const PREVIEW_CHARS = 200;

/** The prompt line currently on screen, so output can be drawn above it. */
export interface PromptLine {
  clear(): void;
  redraw(): void;
}

export interface Printer {
  style: Style;
  /** Writes one or more lines (a trailing newline is added). */
  line(text?: string, tone?: Tone): void;
  /** Writes raw text without a newline (prompts, streamed text). */
  write(text: string): void;
  /** Renders one loop event. */
  event(event: LoopEvent): void;
  attachPrompt(prompt: PromptLine | null): void;
}

/** `main` has no prefix; every other scope is indented and tagged: `  [sub] `. */
export function scopePrefix(scope: string): string {
  return scope === "main" ? "" : `  [${scope}] `;
}

/** The colours a teammate's prefix can take; its name picks one, the same every run. */
const NAME_COLOURS = ["cyan", "magenta", "blue", "green", "yellow"] as const;

/** A teammate's colour (s13): a hash of its name, so `[alice] ` always looks the same. */
export function scopeColour(scope: string): (typeof NAME_COLOURS)[number] {
  let hash = 0;
  for (const char of scope) hash = (hash * 31 + char.codePointAt(0)!) >>> 0;
  return NAME_COLOURS[hash % NAME_COLOURS.length]!;
}

/** First `max` characters, then `... (N more chars)`. */
export function preview(text: string, max = PREVIEW_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... (${text.length - max} more chars)`;
}

export function createPrinter(out: Writable, color: boolean): Printer {
  const style = createStyle(color);
  let prompt: PromptLine | null = null;
  // True while a streamed text line is open (no newline written yet).
  let midLine = false;

  const paint = (text: string, tone: Tone | undefined): string => {
    switch (tone) {
      case "dim":
        return style.dim(text);
      case "warn":
        return style.yellow(text);
      case "error":
        return style.red(text);
      case "success":
        return style.green(text);
      case "accent":
        return style.magenta(text);
      default:
        return text;
    }
  };

  const emit = (raw: string) => {
    prompt?.clear();
    if (midLine) {
      out.write("\n");
      midLine = false;
    }
    out.write(raw);
    prompt?.redraw();
  };

  // `main` and `sub` lines take their tone whole; a teammate's name keeps its own colour.
  const named = (scope: string) => scope !== "main" && scope !== "sub";
  const tag = (scope: string) =>
    named(scope) ? style[scopeColour(scope)](scopePrefix(scope)) : scopePrefix(scope);
  const lines = (scope: string, text: string, tone?: Tone): void => {
    const body = text
      .split("\n")
      .map((row) =>
        named(scope) ? tag(scope) + paint(row, tone) : paint(scopePrefix(scope) + row, tone),
      )
      .join("\n");
    emit(`${body}\n`);
  };

  return {
    style,
    line(text = "", tone) {
      lines("main", text, tone);
    },
    write(text) {
      out.write(text);
    },
    attachPrompt(next) {
      prompt = next;
    },
    event(ev) {
      switch (ev.type) {
        case "text":
          if (ev.streamed) {
            if (midLine) out.write("\n");
            midLine = false;
            return;
          }
          if (ev.text.trim()) lines(ev.scope, ev.text);
          return;
        case "text_delta":
          prompt?.clear();
          if (!midLine) out.write(tag(ev.scope));
          out.write(ev.text.replaceAll("\n", `\n${tag(ev.scope)}`));
          midLine = !ev.text.endsWith("\n");
          return;
        case "thinking":
          if (ev.text.trim()) lines(ev.scope, `(thinking) ${ev.text}`, "dim");
          return;
        case "tool_call": {
          const input = preview(JSON.stringify(ev.input) ?? "null");
          emit(`${tag(ev.scope)}${style.cyan(`> ${ev.name}(${input})`)}\n`);
          return;
        }
        case "tool_result":
          if (!ev.quiet) lines(ev.scope, indent(preview(ev.content)), ev.isError ? "warn" : "dim");
          return;
        case "notice":
          lines(ev.scope, ev.text, ev.tone);
          return;
      }
    },
  };
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((row) => `  ${row}`)
    .join("\n");
}
