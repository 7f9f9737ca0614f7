/** The line reader and the printer. */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  colorEnabled,
  createPrinter,
  LineReader,
  preview,
  scopePrefix,
} from "../../shared/src/index.ts";
import { Capture } from "../helpers/run.ts";

function setup(terminal = false) {
  const input = new PassThrough();
  const output = new Capture();
  const printer = createPrinter(output, false);
  const reader = new LineReader({ input, output, printer, terminal });
  return { input, output, printer, reader };
}

describe("line reader", () => {
  it("queues lines that arrive while the agent is busy and hands them out in order", async () => {
    const { input, reader } = setup();
    input.write("one\ntwo\nthree\n");
    await new Promise((resolve) => setImmediate(resolve));
    expect(await reader.next("> ")).toEqual({ type: "line", text: "one" });
    expect(await reader.next("> ")).toEqual({ type: "line", text: "two" });
    expect(await reader.next("> ")).toEqual({ type: "line", text: "three" });
    input.end();
    expect(await reader.next("> ")).toEqual({ type: "eof" });
    expect(await reader.next("> ")).toEqual({ type: "eof" });
  });

  it("echoes piped lines after the prompt so a transcript reads naturally", async () => {
    const { input, output, reader } = setup();
    input.end("hello\n");
    await reader.next("s01 >> ");
    expect(output.text).toBe("s01 >> hello\n");
  });

  it("answers a question only with a line typed after it; earlier lines stay queued", async () => {
    const { input, reader } = setup(true);
    input.write("queued before\n");
    await new Promise((resolve) => setImmediate(resolve));
    const answer = reader.ask("Allow? [y/N] ");
    input.write("y\n");
    expect(await answer).toBe("y");
    expect(await reader.next("> ")).toEqual({ type: "line", text: "queued before" });
  });

  // Ctrl-D at an approval closes readline before the REPL shows its next prompt; Node 24
  // throws ERR_USE_AFTER_CLOSE if the reader then draws that prompt through readline.
  it.each([
    ["in a terminal", true],
    ["on a pipe", false],
  ])(
    "answers null on EOF during a question and then reports EOF to the REPL (%s)",
    async (_, terminal) => {
      const { input, output, reader } = setup(terminal);
      const answer = reader.ask("Allow? ");
      input.end();
      expect(await answer).toBeNull();
      expect(await reader.next("> ")).toEqual({ type: "eof" });
      expect(await reader.ask("Allow? ")).toBeNull();
      reader.close();
      // In a terminal the last prompt is still shown, as before the interface closed; on
      // a pipe a prompt appears only with the line that answers it, and none came.
      expect(output.text).toBe(terminal ? "Allow? \n> \n" : "Allow? \n");
    },
  );

  it("redraws the open prompt after background output even once the reader has closed", async () => {
    const { output, printer, reader } = setup(true);
    const pending = reader.next("> ");
    reader.close();
    printer.line("[cron] job fired");
    expect(await pending).toEqual({ type: "eof" });
    expect(output.text.replaceAll("\r", "")).toBe("> [cron] job fired\n> \n");
  });

  it("routes Ctrl-C by state: prompt ends, turn interrupts, question denies", async () => {
    const { reader } = setup(true);
    const atPrompt = reader.next("> ");
    reader.interrupt();
    expect(await atPrompt).toEqual({ type: "interrupt" });

    let interrupted = 0;
    reader.onTurnInterrupt = () => interrupted++;
    reader.interrupt(); // the REPL is in a turn after next() returned
    expect(interrupted).toBe(1);

    const question = reader.ask("Allow? ");
    reader.interrupt();
    expect(await question).toBeNull();
  });

  it("takes external events into the same FIFO", async () => {
    const { reader } = setup();
    reader.push({ type: "external", kind: "cron", text: "job fired" });
    expect(await reader.next("> ")).toEqual({ type: "external", kind: "cron", text: "job fired" });
  });

  it("redraws the open prompt after background output", async () => {
    const { output, printer, reader } = setup(true);
    const pending = reader.next("s01 >> ");
    printer.line("[cron] job fired");
    const raw = output.chunks.join("");
    // The prompt line is cleared, the line printed, then readline redraws the prompt.
    expect(raw).toContain("\r\x1b[2K[cron] job fired\n");
    expect(output.text.replaceAll("\r", "")).toBe("s01 >> [cron] job fired\ns01 >> ");
    reader.push({ type: "eof" });
    await pending;
  });
});

describe("printer", () => {
  it("shows a tool call as name(JSON) and a dim preview of its output", () => {
    const output = new Capture();
    const printer = createPrinter(output, false);
    printer.event({
      type: "tool_call",
      scope: "main",
      id: "1",
      name: "bash",
      input: { command: "ls" },
    });
    printer.event({
      type: "tool_result",
      scope: "main",
      id: "1",
      name: "bash",
      content: "x".repeat(250),
      isError: false,
      durationMs: 1,
    });
    expect(output.text).toBe(`> bash({"command":"ls"})\n  ${"x".repeat(200)}... (50 more chars)\n`);
  });

  it("prefixes every line of another scope", () => {
    const output = new Capture();
    createPrinter(output, false).event({ type: "text", scope: "sub", text: "a\nb" });
    expect(output.text).toBe("  [sub] a\n  [sub] b\n");
    expect(scopePrefix("main")).toBe("");
  });

  it("colours only when enabled", () => {
    const plain = new Capture();
    createPrinter(plain, false).line("warn", "warn");
    expect(plain.chunks.join("")).toBe("warn\n");
    const coloured = new Capture();
    createPrinter(coloured, true).line("warn", "warn");
    expect(coloured.chunks.join("")).toBe("\x1b[33mwarn\x1b[39m\n");
  });

  it("decides colour from TTY, NO_COLOR and FORCE_COLOR", () => {
    expect(colorEnabled({ isTTY: true }, {})).toBe(true);
    expect(colorEnabled({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled({ isTTY: false }, {})).toBe(false);
    expect(colorEnabled({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(true);
    expect(colorEnabled({ isTTY: true }, { FORCE_COLOR: "0", NO_COLOR: "1" })).toBe(false);
  });

  it("previews long text with a count of what was left out", () => {
    expect(preview("abc", 2)).toBe("ab... (1 more chars)");
    expect(preview("ab", 2)).toBe("ab");
  });

  it("keeps streamed text on one line and closes it before the next line", () => {
    const output = new Capture();
    const printer = createPrinter(output, false);
    printer.event({ type: "text_delta", scope: "main", text: "Hel" });
    printer.event({ type: "text_delta", scope: "main", text: "lo" });
    printer.line("next");
    expect(output.text).toBe("Hello\nnext\n");
  });

  it("prints a streamed answer's final text event as nothing but the end of its line", () => {
    const output = new Capture();
    const printer = createPrinter(output, false);
    printer.event({ type: "text_delta", scope: "main", text: "Two " });
    printer.event({ type: "text_delta", scope: "main", text: "words." });
    printer.event({ type: "text", scope: "main", text: "Two words.", streamed: true });
    printer.event({ type: "text", scope: "main", text: "Not streamed." });
    expect(output.text).toBe("Two words.\nNot streamed.\n");
  });
});
