/**
 * The site's demo step-through: every chapter's offline demo runs in this process through
 * the chapter's own `main` (as `pnpm --filter sNN start` runs it with nothing configured),
 * then its session log is read back: each request as the model received it, paired with
 * the response or API error the log recorded for it. The parts the chapter's own mechanism
 * put into a request are marked, so the page shows what the new code sent.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { type Main, readRequests } from "shared";

/** A request as the session log rebuilds it (the SDK's MessageCreateParams). */
type Params = ReturnType<typeof readRequests>[number]["params"];
type MessageParam = Params["messages"][number];
type Block = Record<string, unknown> & { type: string };
/** A tool's name; server tools in the SDK's union have one too, under another type. */
const toolName = (tool: NonNullable<Params["tools"]>[number]) => (tool as { name: string }).name;

/** What this page reads of a logged response (the SDK's Message). */
interface Reply {
  model: string;
  content: Block[];
  stop_reason: string | null;
  usage?: { input_tokens: number; output_tokens: number };
}

/** What the log recorded for one request: the model's reply, an API error, or nothing. */
export type Outcome =
  | { kind: "response"; message: Reply }
  | { kind: "api_error"; error: unknown }
  | null;

export interface Step {
  /** 1-based, across the demo's sessions. */
  n: number;
  session: number;
  scope: string;
  params: Params;
  outcome: Outcome;
}

export interface DemoTrace {
  /** What the terminal showed (the workspace path replaced by <workspace>). */
  output: string;
  steps: Step[];
}

/** The demo's temporary folder, written as this in everything the site shows. */
const WORKSPACE = "<workspace>";

/**
 * Runs one chapter's demo in this process, as `start` runs it with nothing configured, and
 * reads its session logs (one per session: s09's demo restarts the harness). The demo's
 * workspace is removed afterwards.
 */
export async function traceDemo(
  chapterDir: string,
  options: { input?: string } = {},
): Promise<DemoTrace> {
  const entry = pathToFileURL(path.join(chapterDir, "src", "main.ts")).href;
  const { main } = (await import(entry)) as { main: Main };
  let output = "";
  const stdout = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      output += chunk.toString();
      done();
    },
  });
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1" };
  // Typed input is ignored: with nothing configured, `start` plays the demo's own script.
  const stdin = Readable.from(options.input === undefined ? [] : [options.input]);
  const code = await main({ argv: [], stdin, stdout, env });
  const workdir = /workspace is kept at (\S+)/.exec(output)?.[1];
  if (code !== 0 || workdir === undefined) {
    throw new Error(`the demo of ${path.basename(chapterDir)} exited with ${code}:\n${output}`);
  }
  try {
    const logs = path.join(workdir, ".harness", "logs");
    const files = readdirSync(logs)
      .filter((name) => name.endsWith("_api.jsonl"))
      .sort();
    const steps: Step[] = [];
    files.forEach((name, session) => {
      const text = readFileSync(path.join(logs, name), "utf8").split(workdir).join(WORKSPACE);
      for (const step of pairSteps(text)) steps.push({ ...step, n: steps.length + 1, session });
    });
    return { output: output.split(workdir).join(WORKSPACE), steps };
  } finally {
    rmSync(workdir, { recursive: true, force: true });
  }
}

/** Requests in log order, each with the first response or API error of its scope after it. */
export function pairSteps(apiLog: string): Array<Omit<Step, "n" | "session">> {
  const requests = readRequests(apiLog);
  const waiting = new Map<string, number[]>();
  const outcomes: Outcome[] = requests.map(() => null);
  let seen = 0;
  for (const line of apiLog.split("\n")) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as { kind: string; scope: string; data: unknown };
    const queue = waiting.get(entry.scope) ?? [];
    waiting.set(entry.scope, queue);
    if (entry.kind === "request") queue.push(seen++);
    const at = entry.kind === "response" || entry.kind === "api_error" ? queue.shift() : undefined;
    if (at === undefined) continue;
    outcomes[at] =
      entry.kind === "response"
        ? { kind: "response", message: entry.data as Reply }
        : { kind: "api_error", error: entry.data };
  }
  return requests.map((r, i) => ({
    scope: r.scope,
    params: r.params,
    outcome: outcomes[i] ?? null,
  }));
}

// ---------------------------------------------------------------------------
// What each chapter's mechanism adds to a request

/**
 * A part of a request that a chapter's own mechanism put there: a text (a system section,
 * a message's text, a tool result) that matches `text`, every block of type `block`, a
 * request whose scope matches `scope`, a request parameter `param` whose value differs
 * from the previous request of the same scope, or (`retry`) a body sent again unchanged.
 */
export interface Mark {
  label: string;
  text?: RegExp;
  block?: string;
  scope?: RegExp;
  param?: string;
  /** A request whose body is the previous request's of its scope, byte for byte. */
  retry?: boolean;
}

/**
 * Every chapter has marks, and its demo shows each of them at least once (site.test.ts).
 * Tools, system sections and request parameters no earlier chapter's demo sent are marked
 * as well, without an entry here.
 */
export const MARKS: Record<string, Mark[]> = {
  s01: [
    { block: "tool_result", label: "the tool's output, sent back as a tool_result" },
    { text: /^Error: Dangerous command blocked/, label: "the block list's refusal" },
  ],
  s02: [
    { text: /^(Wrote \d+ bytes to|Edited) /, label: "a file tool's result" },
    { text: /^Error: Path escapes workspace/, label: "the workspace guard's error" },
  ],
  s03: [{ text: /^Permission denied/, label: "a permission gate's denial" }],
  s04: [
    { text: /^Blocked by PreToolUse hook/, label: "a PreToolUse hook blocked the call" },
    { text: /^Before you finish/, label: "the Stop hook asks the model to go on" },
  ],
  s05: [
    {
      text: /<reminder>Update your todos\.<\/reminder>/,
      label: "the todo reminder the harness attached",
    },
    { text: /^\[[ >x]\] /, label: "todo_write returns the list it kept" },
  ],
  s06: [{ scope: /^sub$/, label: "the subagent's own request: a fresh history" }],
  s07: [
    {
      text: /^Base directory for this skill: .*\n\n---\nname: /,
      label: "load_skill returned the skill's folder and full text",
    },
  ],
  s08: [
    { text: /<persisted-output>/, label: "a stub replaced the large output" },
    { text: /^\[Earlier tool result/, label: "an old result, cleared" },
    { text: /^\[Compacted\]/, label: "the history, compacted into a summary" },
    { scope: /^compact$/, label: "the summariser's request" },
  ],
  s09: [
    { text: /^Relevant memory records:/, label: "the recalled memory section" },
    { scope: /^memory-/, label: "a memory request (selection or extraction)" },
  ],
  s10: [{ text: /^(Created|Updated|Claimed|Completed) task_/, label: "the task board's answer" }],
  s11: [
    { text: /^\[Background task \S+ started\]/, label: "the job runs in the background" },
    { text: /^<task_notification>/, label: "the background job's notification" },
  ],
  s12: [
    { text: /^Scheduled cron_/, label: "the job is on the schedule" },
    { text: /^\[Scheduled\]/, label: "the scheduled prompt, delivered as its own turn" },
  ],
  s13: [
    { text: /^\[Team events\]/, label: "team events from the lead's mailbox" },
    { text: /^\[Plan (approved|rejected)\]/, label: "the lead's answer to a plan" },
    { scope: /^(alice|bob)$/, label: "a teammate's own request" },
  ],
  s14: [
    { text: /^Connected to MCP server/, label: "a server connected; its tools join the list" },
    { text: /^\[(docs|deploy)\] /, label: "an MCP tool's result" },
  ],
  s15: [
    { retry: true, label: "the same body again: a retry" },
    { param: "model", label: "the model changed: the fallback, or back to MODEL_ID" },
    { param: "max_tokens", label: "max_tokens raised for the redo" },
    { block: "cache_control", label: "a prompt-cache breakpoint" },
  ],
  s16: [
    { scope: /^workflow$/, label: "a workflow agent's call" },
    { text: /"async_launched"/, label: "the workflow started in the background" },
  ],
  s17: [
    { text: /^\[Goal still active\]/, label: "the goal keeps the turn going" },
    { scope: /^goal-evaluator$/, label: "the evaluator's request" },
  ],
};

/** What earlier chapters' demos already sent: tool names, system section heads, parameters. */
export interface Seen {
  tools: Set<string>;
  sections: Set<string>;
  params: Set<string>;
}

export const emptySeen = (): Seen => ({ tools: new Set(), sections: new Set(), params: new Set() });

/** Where a section's label ends at the latest: "Project instructions from CLAUDE.md:". */
const LABEL_MAX = 46;
/** A paragraph that opens a section of the prompt: "Memory: …", "Skills available:". */
const SECTION_HEAD = new RegExp(`^[A-Z][^:\\n]{0,${LABEL_MAX - 1}}:(\\s|$)`);

/**
 * A system prompt's sections, whether it is a string or text blocks: each starts with a
 * labelled paragraph ("Planning: …"), and paragraphs without a label belong to the section
 * before them (a CLAUDE.md's own paragraphs, recalled records).
 */
export function systemSections(system: Params["system"]): Array<{ text: string; cached: boolean }> {
  const blocks =
    system === undefined
      ? []
      : typeof system === "string"
        ? [{ text: system, cached: false }]
        : system.map((b) => ({ text: b.text, cached: b.cache_control != null }));
  return blocks.flatMap(({ text, cached }) => {
    const sections: string[] = [];
    for (const paragraph of text.split(/\n\n+/).filter((p) => p.trim() !== "")) {
      if (sections.length === 0 || SECTION_HEAD.test(paragraph)) sections.push(paragraph);
      else sections[sections.length - 1] += `\n\n${paragraph}`;
    }
    return sections.map((part, i) => ({ text: part, cached: cached && i === sections.length - 1 }));
  });
}

/** "Skills available:" for "Skills available:\n- …": what names a section across chapters. */
export function sectionHead(text: string): string {
  const first = text.split("\n")[0] ?? "";
  const colon = first.indexOf(":");
  return (colon > 0 && colon <= LABEL_MAX ? first.slice(0, colon + 1) : first.slice(0, 40)).trim();
}

/** Adds what a chapter's demo sent to `seen`. */
export function remember(seen: Seen, steps: readonly Step[]): void {
  for (const { params } of steps) {
    for (const tool of params.tools ?? []) seen.tools.add(toolName(tool));
    for (const s of systemSections(params.system)) seen.sections.add(sectionHead(s.text));
    for (const key of Object.keys(params)) seen.params.add(key);
  }
}

// ---------------------------------------------------------------------------
// Rendering

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text made safe for HTML content and attribute values. */
export const esc = (text: string) => text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);

const json = (value: unknown) => JSON.stringify(value, null, 2);
/** A tool call's input on one line when it is short, indented when it is not. */
const shortJson = (value: unknown) => {
  const line = JSON.stringify(value);
  return line.length <= 100 ? line : json(value);
};

/** Counts what was marked, per label, so the build can tell a mark its demo never shows. */
type Tally = Map<string, number>;

function marked(label: string, body: string, tally: Tally): string {
  tally.set(label, (tally.get(label) ?? 0) + 1);
  return `<div class="mark"><span class="mark-label">${esc(label)}</span>${body}</div>`;
}

function textMark(marks: readonly Mark[], text: string): Mark | undefined {
  return marks.find((m) => m.text?.test(text));
}

function showText(text: string, marks: readonly Mark[], tally: Tally): string {
  const body = `<pre class="text">${esc(text)}</pre>`;
  const mark = textMark(marks, text);
  return mark ? marked(mark.label, body, tally) : body;
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return json(content);
  return content.map((b: Block) => (b.type === "text" ? String(b.text) : `[${b.type}]`)).join("\n");
}

function showBlock(block: Block, marks: readonly Mark[], tally: Tally): string {
  let body: string;
  if (block.type === "text") {
    body = `<div class="block"><span class="kind">text</span>${showText(String(block.text), marks, tally)}</div>`;
  } else if (block.type === "tool_use") {
    body =
      `<div class="block"><span class="kind">tool_use</span> <code>${esc(String(block.name))}</code>` +
      `<pre class="text">${esc(shortJson(block.input))}</pre></div>`;
  } else if (block.type === "tool_result") {
    const error = block.is_error === true ? ' <span class="error">is_error</span>' : "";
    body =
      `<div class="block"><span class="kind">tool_result</span>${error} <code>${esc(String(block.tool_use_id))}</code>` +
      `${showText(resultText(block.content), marks, tally)}</div>`;
  } else {
    body = `<div class="block"><span class="kind">${esc(block.type)}</span><pre class="text">${esc(json(block))}</pre></div>`;
  }
  const mark = marks.find((m) => m.block === block.type);
  return mark ? marked(mark.label, body, tally) : body;
}

function showMessage(message: MessageParam, marks: readonly Mark[], tally: Tally) {
  const blocks =
    typeof message.content === "string"
      ? `<div class="block">${showText(message.content, marks, tally)}</div>`
      : (message.content as unknown as Block[]).map((b) => showBlock(b, marks, tally)).join("");
  return `<div class="message ${esc(message.role)}"><div class="role">${esc(message.role)}</div>${blocks}</div>`;
}

/** How many messages `b` begins with that `a` has in the same places. */
function sameMessages(a: readonly unknown[], b: readonly unknown[]): number {
  let n = 0;
  while (n < a.length && n < b.length && json(a[n]) === json(b[n])) n++;
  return n;
}

function showOutcome(outcome: Outcome): string {
  if (outcome === null) return '<div class="outcome none">(no reply recorded)</div>';
  if (outcome.kind === "api_error") {
    return `<div class="outcome error"><div class="role">API error</div><pre class="text">${esc(json(outcome.error))}</pre></div>`;
  }
  const { message } = outcome;
  const blocks = message.content.map((b) => showBlock(b, [], new Map())).join("");
  const usage = message.usage
    ? ` · ${message.usage.input_tokens} in / ${message.usage.output_tokens} out`
    : "";
  return (
    `<div class="outcome"><div class="role">response · ${esc(message.model)} · stop_reason ${esc(String(message.stop_reason))}${esc(usage)}</div>` +
    `${blocks}</div>`
  );
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

function summaryOf(step: Step, previous: Step | undefined, retry: boolean): string {
  const { params, outcome } = step;
  const what =
    outcome === null
      ? "no reply"
      : outcome.kind === "api_error"
        ? "API error"
        : outcome.message.content
            .map((b) => (b.type === "tool_use" ? String(b.name) : b.type))
            .join(", ");
  const again = retry && previous ? ` · same body as #${previous.n}` : "";
  return (
    `<span class="n">#${step.n}</span> <span class="scope">${esc(step.scope)}</span> · ` +
    `${count(params.messages.length, "message")} · ${count(params.tools?.length ?? 0, "tool")}${esc(again)} → ${esc(what)}`
  );
}

/** One chapter's step-through: the HTML, and how often each mark label showed. */
export function renderSteps(
  chapterId: string,
  steps: readonly Step[],
  seen: Seen,
): { html: string; tally: Tally } {
  const marks = MARKS[chapterId] ?? [];
  const tally: Tally = new Map();
  const last = new Map<string, Step>();
  let session = 0;
  const cards = steps.map((step) => {
    if (step.session !== session) last.clear();
    const previous = last.get(step.scope);
    last.set(step.scope, step);
    const { params } = step;
    const parts: string[] = [];

    const scopeMark = marks.find((m) => m.scope?.test(step.scope));
    if (scopeMark) parts.push(marked(scopeMark.label, "", tally));
    const retry = previous !== undefined && json(previous.params) === json(params);
    const retryMark = marks.find((m) => m.retry);
    if (retryMark && retry) parts.push(marked(retryMark.label, "", tally));

    const { system, tools, messages, ...rest } = params;
    const rows = Object.entries(rest).map(([key, value]) => {
      const cell = `<code>${esc(key)}</code> ${esc(JSON.stringify(value))}`;
      const changed =
        previous !== undefined &&
        JSON.stringify((previous.params as unknown as Record<string, unknown>)[key]) !==
          JSON.stringify(value);
      const mark = marks.find((m) => m.param === key && changed);
      if (mark) return marked(mark.label, cell, tally);
      if (!seen.params.has(key)) return marked(`new in ${chapterId}: ${key}`, cell, tally);
      return `<div>${cell}</div>`;
    });
    parts.push(`<div class="params">${rows.join("")}</div>`);

    const sections = systemSections(system);
    if (sections.length > 0) {
      if (previous && json(previous.params.system) === json(system)) {
        parts.push(
          `<div class="same">system: the same ${count(sections.length, "section")} as #${previous.n}</div>`,
        );
      } else {
        const cache = marks.find((m) => m.block === "cache_control");
        const shown = sections.map((s) => {
          let body = showText(s.text, marks, tally);
          if (!body.startsWith('<div class="mark">') && !seen.sections.has(sectionHead(s.text))) {
            body = marked(`new in ${chapterId}: this system section`, body, tally);
          }
          return s.cached && cache ? marked(cache.label, body, tally) : body;
        });
        parts.push(
          `<details class="system"${shown.some((s) => s.includes('class="mark"')) ? " open" : ""}><summary>system: ${count(sections.length, "section")}</summary>${shown.join("")}</details>`,
        );
      }
    }

    if (tools !== undefined && tools.length > 0) {
      if (previous && json(previous.params.tools) === json(tools)) {
        parts.push(`<div class="same">tools: the same ${tools.length} as #${previous.n}</div>`);
      } else {
        const names = tools
          .map(toolName)
          .map((name) =>
            seen.tools.has(name)
              ? `<code>${esc(name)}</code>`
              : marked(`new in ${chapterId}`, `<code>${esc(name)}</code>`, tally),
          );
        parts.push(`<div class="tools">tools (${tools.length}): ${names.join(" ")}</div>`);
      }
    }

    const kept = previous ? sameMessages(previous.params.messages, messages) : 0;
    if (kept > 0) {
      parts.push(
        `<div class="same">${count(kept, "earlier message")}, as in #${previous!.n}</div>`,
      );
    }
    parts.push(...messages.slice(kept).map((m) => showMessage(m, marks, tally)));
    parts.push(showOutcome(step.outcome));

    const hasMark = parts.some((part) => part.includes('class="mark"'));
    const head =
      step.session !== session
        ? `<h4 class="session">Session ${step.session + 1}: the harness started again</h4>\n`
        : "";
    session = step.session;
    return `${head}<details class="${hasMark ? "step has-mark" : "step"}" id="step-${step.n}"${hasMark ? " open" : ""}><summary>${summaryOf(step, previous, retry)}</summary>${parts.join("")}</details>`;
  });
  return { html: cards.join("\n"), tally };
}
