/**
 * Property-based tests (fast-check) of three mechanisms, against every chapter that has
 * them, with a fixed seed and a bounded number of runs so a failure is reproducible:
 *
 *   compaction (s08+)      every layer's output over generated histories is a request the
 *                          fake API accepts, pairs stay whole, the newest batch survives
 *   command parsing (s03+) a deny-listed or destructive command wrapped in harmless shell
 *                          context is never run; harmless commands are
 *   path confinement (s02+) `isInside(resolveInWorkspace(ws, p), ws)` agrees with a real
 *                          path the test computes itself, step by step, links followed
 *
 * A failing property prints its counterexample (already shrunk) and the seed; rerun with
 * the printed `path` to replay only that case.
 */
import {
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import type Anthropic from "@anthropic-ai/sdk";
import fc from "fast-check";
import { type ModelClient, nullLog, type ToolMap, toolMap } from "shared";
import { validateMessageRequest } from "shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type * as PathsModule from "../chapters/s02-tools/src/paths.ts";
import type * as PermissionsModule from "../chapters/s03-permissions/src/permissions.ts";
import type * as CompactModule from "../chapters/s08-compact/src/compact.ts";
import type * as LayersModule from "../chapters/s08-compact/src/compact-layers.ts";
import { type Chapter, importChapter, moduleVersions } from "./chapters.ts";
import { runContext } from "./helpers/context.ts";
import { fakeMessage } from "./helpers/message.ts";
import { baseTools, coldClock, tempWorkspace } from "./helpers/run.ts";

/** One seed for every property: the same cases on every run and machine. */
const SEED = 20261201;
const check = <T>(property: fc.IPropertyWithHooks<T>, numRuns: number) =>
  fc.assert(property, { seed: SEED, numRuns });
const checkAsync = <T>(property: fc.IAsyncPropertyWithHooks<T>, numRuns: number) =>
  fc.assert(property, { seed: SEED, numRuns });

/**
 * Runs for one chapter: the full count on the first and the last chapter with the
 * mechanism, a smoke count on the chapters between. Unchanged files are byte-identical
 * copies of the earlier chapter's, so the middle chapters add little, and the whole file
 * stays within ~5 s on 2 cores.
 */
function runsFor(chapter: Chapter, chapters: Chapter[], full: number, smoke: number): number {
  return chapter.id === chapters[0]?.id || chapter.id === chapters.at(-1)?.id ? full : smoke;
}

// =======================================================================================
// 1. Compaction (s08+)
// =======================================================================================

type MessageParam = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;
type ToolResult = Anthropic.ToolResultBlockParam;
type Limits = LayersModule.CompactLimits;

const REMINDER = "<reminder>Update your todos.</reminder>";
const TASK_NOTE = "<task_notification>job 7 finished (exit 0)</task_notification>";
const SUMMARY = "the summary";
const MIDDLE = "\n...[middle omitted; full transcript is on disk]...\n";
const PREVIEW_CHARS = 2_000;
const SIGNAL = new AbortController().signal;

/** One tool_result as generated: its size, how its content is shaped, an error flag. */
interface ResultSpec {
  size: number;
  form: "string" | "block" | "blocks";
  error: boolean;
}
type ExchangeSpec =
  | {
      kind: "batch";
      /** A text block before the tool_use blocks. */
      lead: boolean;
      results: ResultSpec[];
      /** Text blocks after the results (a reminder, a task notification). */
      extras: string[];
      /** A separate user message after the results message. */
      notification: boolean;
    }
  | { kind: "talk" };

const resultSpec: fc.Arbitrary<ResultSpec> = fc.record({
  size: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 300 }) },
    { weight: 3, arbitrary: fc.integer({ min: 300, max: 2_000 }) },
    { weight: 2, arbitrary: fc.integer({ min: 2_000, max: 9_000 }) },
  ),
  form: fc.constantFrom("string", "string", "block", "blocks"),
  error: fc.integer({ min: 0, max: 9 }).map((n) => n === 9), // shrinks to false
});
const exchangeSpec: fc.Arbitrary<ExchangeSpec> = fc.oneof(
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant("batch" as const),
      lead: fc.integer({ min: 0, max: 3 }).map((n) => n === 3),
      results: fc.array(resultSpec, { minLength: 1, maxLength: 4 }),
      extras: fc.subarray([REMINDER, TASK_NOTE]),
      notification: fc.integer({ min: 0, max: 6 }).map((n) => n === 6),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: "talk" as const }) },
);
const historySpec = fc.array(exchangeSpec, { minLength: 1, maxLength: 28 });

const user = (content: string): MessageParam => ({ role: "user", content });

/** The messages of some exchanges; tool ids `toolu_<tag>_<n>` are unique per tag. */
function buildExchanges(specs: ExchangeSpec[], tag: string): MessageParam[][] {
  let next = 0;
  return specs.map((spec, round): MessageParam[] => {
    if (spec.kind === "talk") {
      return [
        { role: "assistant", content: [{ type: "text", text: `answer ${round}` }] },
        user(`follow-up ${round}`),
      ];
    }
    const ids = spec.results.map(() => `toolu_${tag}_${next++}`);
    const calls: Block[] = ids.map((id) => ({
      type: "tool_use",
      id,
      name: "bash",
      input: { command: `echo ${id}` },
    }));
    const results = spec.results.map((result, i): ToolResult => {
      const id = ids[i]!;
      const body = `${id}:${"x".repeat(result.size)}`;
      const half = Math.floor(body.length / 2);
      const content =
        result.form === "string"
          ? body
          : result.form === "block"
            ? [{ type: "text" as const, text: body }]
            : [
                { type: "text" as const, text: body.slice(0, half) },
                { type: "text" as const, text: body.slice(half) },
              ];
      return {
        type: "tool_result",
        tool_use_id: id,
        content,
        ...(result.error ? { is_error: true } : {}),
      };
    });
    const exchange: MessageParam[] = [
      {
        role: "assistant",
        content: [
          ...(spec.lead ? [{ type: "text" as const, text: `round ${round}` }] : []),
          ...calls,
        ],
      },
      {
        role: "user",
        content: [...results, ...spec.extras.map((text) => ({ type: "text" as const, text }))],
      },
    ];
    if (spec.notification) exchange.push(user(`[notification] background job ${round} done`));
    return exchange;
  });
}

const historyOf = (specs: ExchangeSpec[]) => [
  user("request under test"),
  ...buildExchanges(specs, "p").flat(),
];

/**
 * Limits the harness accepts (checked with limitsFromEnv) and small enough that every
 * layer acts on the generated histories, down to a one-message L1 tail (keep head =
 * target − 2): L1 still keeps the last reply and everything after it.
 */
const limitsArb = fc
  .record({
    contextLimit: fc.integer({ min: 3_000, max: 30_000 }),
    persistThreshold: fc.integer({ min: 1_000, max: 6_000 }),
    batchBudget: fc.integer({ min: 2_000, max: 12_000 }),
    keepRecent: fc.integer({ min: 1, max: 5 }),
    microMinLength: fc.integer({ min: 60, max: 400 }),
    snipKeepHead: fc.integer({ min: 1, max: 4 }),
    tail: fc.integer({ min: 1, max: 10 }),
    slack: fc.integer({ min: 1, max: 12 }),
    summaryInputLimit: fc.integer({ min: 400, max: 6_000 }),
  })
  .map(({ tail, slack, ...rest }): Limits => {
    const snipTargetMessages = Math.max(5, rest.snipKeepHead + 1 + tail);
    return { ...rest, snipTargetMessages, snipMaxMessages: snipTargetMessages + slack };
  });

/** The environment that sets `limits`, by the chapter's own variable names. */
const envOf = (limits: Limits, names: Record<keyof Limits, string>) =>
  Object.fromEntries(
    (Object.keys(names) as Array<keyof Limits>).map((key) => [names[key], String(limits[key])]),
  );

function blocksOf(message: MessageParam): Block[] {
  return typeof message.content === "string" ? [] : message.content;
}
function toolUseIds(message: MessageParam): string[] {
  return blocksOf(message).flatMap((b) => (b.type === "tool_use" ? [b.id] : []));
}
function toolResultIds(message: MessageParam): string[] {
  return blocksOf(message).flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : []));
}
function resultText(block: ToolResult): string {
  if (typeof block.content === "string") return block.content;
  return (block.content ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}
const lastAssistantIndex = (messages: MessageParam[]) =>
  messages.findLastIndex((m) => m.role === "assistant");

/**
 * The request is one the fake API accepts, and the pairs are exact: every tool_use is
 * answered by the next message with one tool_result per id, in the same order and before
 * any text, and no tool_result answers anything else (none orphaned).
 */
function expectWellFormed(messages: MessageParam[]): void {
  expect(validateMessageRequest({ model: "m", max_tokens: 10, messages })).toBeNull();
  const problems = messages.flatMap((message, i) => {
    const uses = toolUseIds(message);
    const results = toolResultIds(message);
    const offered = i > 0 ? toolUseIds(messages[i - 1]!) : [];
    const found: string[] = [];
    if (results.length > 0 && !isDeepStrictEqual(results, offered)) {
      found.push(`message ${i} answers [${results}] after a call of [${offered}]`);
    }
    if (
      !blocksOf(message)
        .slice(0, results.length)
        .every((b) => b.type === "tool_result")
    ) {
      found.push(`message ${i} has text before its results`);
    }
    const answered = toolResultIds(messages[i + 1] ?? user("-"));
    if (uses.length > 0 && !isDeepStrictEqual(answered, uses)) {
      found.push(`message ${i} calls [${uses}], answered by [${answered}]`);
    }
    return found;
  });
  expect(problems).toEqual([]);
}

/**
 * A result after a layer: the original, or (L3) a `<persisted-output>` stub naming a file
 * that holds the original text and previewing its first 2 000 characters.
 */
function expectSameOrStub(after: Block, before: Block, stubs: { count: number }): void {
  if (before.type !== "tool_result" || after.type !== "tool_result") {
    expect(after).toEqual(before);
    return;
  }
  if (typeof after.content === "string" && after.content.startsWith("<persisted-output>")) {
    const original = resultText(before);
    const [open, full, preview, ...rest] = after.content.split("\n");
    expect(open).toBe("<persisted-output>");
    expect(full?.startsWith("Full output: ")).toBe(true);
    expect(preview).toBe("Preview:");
    expect(rest.join("\n")).toBe(`${original.slice(0, PREVIEW_CHARS)}\n</persisted-output>`);
    expect(readFileSync(full!.slice("Full output: ".length), "utf8")).toBe(original);
    expect({ ...after, content: before.content }).toEqual(before);
    stubs.count++;
    return;
  }
  expect(after).toEqual(before);
}

/**
 * The newest batch (the last assistant message of `before` and everything after it) ends
 * `after` whole, the results' contents possibly replaced by L3 stubs.
 */
function expectNewestKept(
  after: MessageParam[],
  before: MessageParam[],
  stubs = { count: 0 },
): void {
  const last = lastAssistantIndex(before);
  if (last < 0) return;
  const newest = before.slice(last);
  const tail = after.slice(after.length - newest.length);
  expect(tail.map((m) => m.role)).toEqual(newest.map((m) => m.role));
  tail.forEach((message, i) => {
    const original = newest[i]!;
    if (typeof original.content === "string") {
      expect(message).toEqual(original);
      return;
    }
    const blocks = blocksOf(message);
    expect(blocks).toHaveLength(original.content.length);
    for (const [j, block] of blocks.entries()) {
      expectSameOrStub(block, original.content[j] as Block, stubs);
    }
  });
}

function fakeClient() {
  const requests: Anthropic.MessageCreateParams[] = [];
  const client: ModelClient = {
    async create(params) {
      requests.push(structuredClone(params) as Anthropic.MessageCreateParams);
      return fakeMessage([{ type: "text", text: SUMMARY, citations: null }]);
    },
  };
  return { client, requests };
}

const compactRun = (workdir: string) =>
  runContext({ request: "request under test", signal: SIGNAL, workdir });

const isMarker = (m: MessageParam | undefined) =>
  m?.role === "user" &&
  typeof m.content === "string" &&
  /^\[\d+ messages archived at [^\n]+\]$/.test(m.content);

// Both chapters with compaction, every property (s09's layers are byte-identical to s08's,
// but it is imported as a separate module and checked on its own).
describe.each(moduleVersions("s08", ["compact.ts", "compact-layers.ts"]))(
  "$id compaction properties",
  (chapter) => {
    let compact: typeof CompactModule;
    let layers: typeof LayersModule;
    let workdir: string;
    beforeAll(async () => {
      compact = await importChapter<typeof CompactModule>(chapter, "compact.ts");
      layers = await importChapter<typeof LayersModule>(chapter, "compact-layers.ts");
      workdir = tempWorkspace("properties-compact");
    });
    afterAll(() => rmSync(workdir, { recursive: true, force: true }));

    function setup(limits: Limits) {
      // Only limits a user could configure: the same checks as the environment variables.
      expect(layers.limitsFromEnv(envOf(limits, layers.LIMIT_VARIABLES))).toEqual(limits);
      rmSync(path.join(workdir, ".harness"), { recursive: true, force: true });
      const fake = fakeClient();
      /** How often each layer said it acted (`[compact L1] …`). */
      const layersActed = new Map<string, number>();
      const compactor = new compact.Compactor({
        workdir,
        client: fake.client,
        model: "m",
        emit: (event) => {
          const layer = event.type === "notice" ? /^\[compact (L\d)\]/.exec(event.text)?.[1] : null;
          if (layer) layersActed.set(layer, (layersActed.get(layer) ?? 0) + 1);
        },
        log: nullLog(),
        limits,
        ...{ now: coldClock() }, // s15 and later: minutes between calls, the cache cold
      });
      return { compactor, summaries: fake.requests, layersActed };
    }

    it("L3, L1, L2, the whole pipeline (L4) and the reactive path keep every request valid", async () => {
      const acted = { L3: 0, L1: 0, L2: 0, L4: 0, stubs: 0, reactive: 0 };
      await checkAsync(
        fc.asyncProperty(historySpec, limitsArb, async (specs, limits) => {
          const { compactor, summaries } = setup(limits);
          const history = historyOf(specs);
          const frozen = structuredClone(history);
          expectWellFormed(history);

          // L3 budget: only the newest batch's results message (right after the last reply)
          // changes, only by stubs; ids and order kept.
          const budgeted = compactor.budget(history, "main");
          expectWellFormed(budgeted);
          expect(budgeted).toHaveLength(history.length);
          const results = history.findLastIndex((m) => m.role === "assistant") + 1;
          for (const [i, m] of budgeted.entries()) if (i !== results) expect(m).toBe(history[i]);
          const stubs = { count: 0 };
          expectNewestKept(budgeted, history, stubs);
          if (budgeted !== history) {
            acted.L3++;
            expect(stubs.count).toBeGreaterThan(0);
          }
          acted.stubs += stubs.count;

          // L1 snip: head + marker + tail, the tail holding the newest batch.
          const snipped = compactor.snip(history, "main");
          expectWellFormed(snipped);
          if (history.length > limits.snipMaxMessages) expect(snipped).not.toBe(history);
          if (snipped !== history) {
            acted.L1++;
            const marker = snipped.findIndex((m, i) => m !== history[i]);
            expect(isMarker(snipped[marker])).toBe(true);
            expect(marker).toBeGreaterThanOrEqual(limits.snipKeepHead);
            const tail = snipped.slice(marker + 1);
            expect(tail).toEqual(history.slice(history.length - tail.length));
            for (const [i, m] of tail.entries()) {
              expect(m).toBe(history[history.length - tail.length + i]);
            }
            const removed = history.length - marker - tail.length;
            expect(snipped[marker]?.content).toMatch(
              new RegExp(`^\\[${removed} messages archived`),
            );
            expect(snipped.length).toBeLessThanOrEqual(limits.snipTargetMessages + 2);
            expectNewestKept(snipped, history);
          }

          // L2 micro: exactly the long results seen before the last keepRecent become
          // placeholders; nothing from the last assistant message on is touched.
          const microed = compactor.micro(history, "main");
          expectWellFormed(microed);
          expect(microed.map(toolResultIds)).toEqual(history.map(toolResultIds));
          expect(microed.map((m) => m.role)).toEqual(history.map((m) => m.role));
          const last = lastAssistantIndex(history);
          const seen = history.flatMap((m, i) =>
            i < last && m.role === "user"
              ? blocksOf(m).flatMap((b, j) => (b.type === "tool_result" ? [{ i, j }] : []))
              : [],
          );
          const old = seen.slice(0, Math.max(0, seen.length - limits.keepRecent));
          const expected = new Set(
            old
              .filter(
                ({ i, j }) =>
                  resultText(blocksOf(history[i]!)[j] as ToolResult).length > limits.microMinLength,
              )
              .map(({ i, j }) => `${i}/${j}`),
          );
          const wrong = microed.flatMap((m, i) =>
            blocksOf(m).flatMap((b, j) => {
              const before = blocksOf(history[i]!)[j]!;
              const want = expected.has(`${i}/${j}`)
                ? { ...before, content: layers.MICRO_PLACEHOLDER }
                : before;
              return isDeepStrictEqual(b, want) ? [] : [`message ${i} block ${j}`];
            }),
          );
          expect(wrong).toEqual([]);
          if (microed !== history) acted.L2++;
          expect(history).toEqual(frozen); // no layer edits its input

          // The whole pipeline, in place; L4 when the result is still over the context limit.
          const prepared = structuredClone(history);
          await compactor.prepare(prepared, compactRun(workdir));
          expectWellFormed(prepared);
          expectNewestKept(prepared, history);
          if (summaries.length > 0) {
            acted.L4++;
            expect(summaries).toHaveLength(1);
            expect(validateMessageRequest(summaries[0])).toBeNull();
            const input = summaries[0]!.messages[0]!.content as string;
            expect(input.length).toBeLessThanOrEqual(limits.summaryInputLimit + MIDDLE.length);
            expect(prepared[0]?.content).toMatch(/^\[Compacted\]\n\nCurrent user request:\n/);
            expect(prepared.length).toBe(1 + history.length - Math.max(0, last));
          } else {
            expect(JSON.stringify(prepared).length + 2).toBeLessThanOrEqual(limits.contextLimit);
          }

          // The reactive path: a summary and the last five messages, a pair never split.
          const reacted = structuredClone(history);
          await compactor.reactive(reacted, compactRun(workdir));
          expectWellFormed(reacted);
          expect(reacted[0]?.content).toMatch(/^\[Compacted\]/);
          const kept = reacted.slice(1);
          expect(kept).toEqual(history.slice(history.length - kept.length));
          if (history.length > 5) expect(kept.length).toBeGreaterThanOrEqual(5);
          if (kept.length > 0) acted.reactive++;
        }),
        60,
      );
      // The properties are not vacuous: every layer acted in some runs.
      expect(acted.L3).toBeGreaterThan(5);
      expect(acted.stubs).toBeGreaterThan(5);
      expect(acted.L1).toBeGreaterThan(5);
      expect(acted.L2).toBeGreaterThan(5);
      expect(acted.L4).toBeGreaterThan(5);
      expect(acted.reactive).toBeGreaterThan(5);
    });

    it("a growing session, the pipeline before every model call, stays valid and keeps each new batch", async () => {
      const acted = new Map<string, number>();
      await checkAsync(
        fc.asyncProperty(historySpec, limitsArb, async (specs, limits) => {
          const { compactor, layersActed } = setup(limits);
          const history: MessageParam[] = [user("request under test")];
          for (const exchange of buildExchanges(specs, "g")) {
            history.push(...structuredClone(exchange));
            const before = structuredClone(history);
            await compactor.prepare(history, compactRun(workdir));
            expectWellFormed(history);
            expectNewestKept(history, before);
          }
          for (const [layer, n] of layersActed) acted.set(layer, (acted.get(layer) ?? 0) + n);
        }),
        20,
      );
      // Every layer acted, again and again, on histories earlier layers had already reduced.
      for (const layer of ["L1", "L2", "L3", "L4"]) {
        expect(acted.get(layer) ?? 0, layer).toBeGreaterThan(10);
      }
    });
  },
);

// =======================================================================================
// 2. Permission command parsing (s03+)
// =======================================================================================

/** Deny-listed commands and the entry that must deny them. */
const DENY_LISTED: Array<[string, string]> = [
  ["sudo ls", "sudo"],
  ["rm -rf /", "rm -rf /"],
  ["shutdown now", "shutdown"],
  ["reboot", "reboot"],
  ["mkfs.ext4 /dev/sdb1", "mkfs"],
  ["dd if=/dev/zero of=x", "dd if="],
];
/** Destructive commands and the reason Gate 2 must ask with. */
const DESTRUCTIVE: Array<[string, string]> = [
  ["rm x", "rm"],
  ["rmdir d", "rmdir"],
  ["unlink f", "unlink"],
  ["chmod 777 f", "chmod 777"],
];
const BENIGN = ["ls", "echo hi", "pwd", "true", "cat README.md", "git status", "echo done"];
const SEPARATORS = [";", " ; ", "&&", " && ", " || ", "|", " | ", "\n", " & ", ";\n"];
const SPACE = [" ", "\t", "  ", " \t", "\t\t "];

/** `'…'` with every `'` written as `'\''`, as a shell script author would. */
const singleQuoted = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
/** `"…"` with `\`, `"`, `$` and backticks escaped, so the shell passes `s` unchanged. */
const doubleQuoted = (s: string) => `"${s.replace(/[\\"$`]/g, (c) => `\\${c}`)}"`;

/** How the command word of the core command is written: bash runs the same program. */
const WORD_FORMS = ["plain", "double", "single", "backslash", "partial", "absolute"] as const;
function writeWord(command: string, form: (typeof WORD_FORMS)[number]): string {
  const space = command.indexOf(" ");
  const word = space === -1 ? command : command.slice(0, space);
  const rest = space === -1 ? "" : command.slice(space);
  const written = {
    plain: word,
    double: `"${word}"`,
    single: `'${word}'`,
    backslash: `\\${word}`,
    partial: `${word[0]}"${word.slice(1)}"`,
    absolute: `/usr/bin/${word}`,
  }[form];
  return written + rest;
}

/** One layer of harmless context around a command. */
interface Wrapper {
  kind: (typeof WRAPPERS)[number];
  benign: string;
  separator: string;
  before: string;
  after: string;
}
const WRAPPERS = [
  "space",
  "before",
  "after",
  "subst",
  "subst-in-quotes",
  "backticks",
  "assign-subst",
  "bash-c",
  "sh-c",
  "bash-lc",
  "eval",
  "env",
  "env-i",
  "nohup",
  "command",
  "time",
  "assign",
  "if",
  "brace",
  "subshell",
  "not",
  "redirect",
  "env-u",
  "env-C",
  "exec-a",
  "xargs-I",
  "timeout",
  "nice",
  "bash-c-dashdash",
  "subst-quoted-paren",
  "process-subst",
  "redirect-first",
  "timeout-dashdash",
] as const;

function wrap(command: string, w: Wrapper): string {
  switch (w.kind) {
    case "space":
      return `${w.before}${command}${w.after}`;
    case "before":
      return `${w.benign}${w.separator}${command}`;
    case "after":
      return `${command}${w.separator}${w.benign}`;
    case "subst":
      return `echo $(${command})`;
    case "subst-in-quotes":
      return `echo "$(${command})"`;
    case "backticks":
      // Backticks do not nest and treat `\` specially: `$(…)` where bash needs it.
      return /[`\\]/.test(command) ? `echo $(${command})` : `echo \`${command}\``;
    case "assign-subst":
      return `out=$(${command})`;
    case "bash-c":
      return `bash -c ${singleQuoted(command)}`;
    case "sh-c":
      return `sh -c ${doubleQuoted(command)}`;
    case "bash-lc":
      return `bash -lc ${singleQuoted(command)}`;
    case "eval":
      return `eval ${singleQuoted(command)}`;
    case "env":
      return `env X=1 ${command}`;
    case "env-i":
      return `env -i ${command}`;
    case "nohup":
      return `nohup ${command}`;
    case "command":
      return `command ${command}`;
    case "time":
      return `time ${command}`;
    case "assign":
      return `X=1 ${command}`;
    case "if":
      return `if true; then ${command}; fi`;
    case "brace":
      return `{ ${command}; }`;
    case "subshell":
      return `( ${command} )`;
    case "not":
      return `! ${command}`;
    case "redirect":
      return `${command} 2>/dev/null`;
    case "env-u":
      return `env -u HOME ${command}`;
    case "env-C":
      return `env -C /tmp ${command}`;
    case "exec-a":
      return `exec -a name ${command}`;
    case "xargs-I":
      return `xargs -I {} ${command}`;
    case "timeout":
      return `timeout -k 1 5s ${command}`;
    case "nice":
      return `nice -n 10 ${command}`;
    case "bash-c-dashdash":
      return `bash -c -- ${singleQuoted(command)}`;
    case "subst-quoted-paren":
      return `echo $(echo ")"; ${command})`;
    case "process-subst":
      return `diff <(${command}) >(cat)`;
    case "redirect-first":
      return `2>/dev/null ${command}`;
    case "timeout-dashdash":
      return `timeout -- 5 ${command}`;
  }
}

const wrapperArb: fc.Arbitrary<Wrapper> = fc.record({
  kind: fc.constantFrom(...WRAPPERS),
  benign: fc.constantFrom(...BENIGN),
  separator: fc.constantFrom(...SEPARATORS),
  before: fc.constantFrom("", ...SPACE),
  after: fc.constantFrom("", ...SPACE),
});
const wrapped = (core: fc.Arbitrary<string>) =>
  fc
    .tuple(core, fc.array(wrapperArb, { maxLength: 4 }))
    .map(([command, wrappers]) => wrappers.reduce(wrap, command));

const coreOf = (list: Array<[string, string]>) =>
  fc
    .tuple(fc.constantFrom(...list), fc.constantFrom(...WORD_FORMS))
    .map(([[command, expected], form]) => ({ command: writeWord(command, form), expected }));
const withContext = (list: Array<[string, string]>) =>
  coreOf(list).chain(({ command, expected }) =>
    wrapped(fc.constant(command)).map((full) => ({ command: full, expected })),
  );

/** Arguments of echo that name dangerous commands but are only printed. */
const SAFE_ARGS = [
  '"rm"',
  "'sudo'",
  '"rm -rf /"',
  "'shutdown now'",
  '"reboot"',
  "'mkfs.ext4 /dev/sdb1'",
  '"dd if=/dev/zero of=x"',
  "'chmod 777 f'",
  "rm",
  "sudo",
  "rmdir",
  "reboot",
  "-rf",
  "/",
];
const safeWord = fc.oneof(fc.stringMatching(/^[a-z0-9._-]{1,8}$/), fc.constantFrom(...SAFE_ARGS));
const harmlessCore = fc.oneof(
  fc.array(safeWord, { maxLength: 5 }).map((args) => ["echo", ...args].join(" ")),
  fc.constantFrom("ls", "ls -la", "cat README.md", "pwd", "git status", "true"),
  fc
    .tuple(fc.array(safeWord, { minLength: 1, maxLength: 3 }), fc.constantFrom(...SEPARATORS))
    .map(([args, separator]) => `echo ${args.join(" ")}${separator}ls`),
);

const PERMISSION_CHAPTERS = moduleVersions("s03", ["permissions.ts", "permission-rules.ts"]);
describe.each(PERMISSION_CHAPTERS)("$id permission parsing properties", (chapter) => {
  const runs = runsFor(chapter, PERMISSION_CHAPTERS, 300, 40);
  let perm: typeof PermissionsModule;
  let tools: ToolMap;
  let workdir: string;
  beforeAll(async () => {
    perm = await importChapter<typeof PermissionsModule>(chapter, "permissions.ts");
    tools = toolMap(await baseTools(chapter, 1000));
    workdir = tempWorkspace("properties-permissions");
  });
  const decide = (command: string) =>
    perm.decide({ id: "toolu_p", name: "bash", input: { command } }, { workdir, rules: [], tools });

  it("a deny-listed command in any harmless context is denied by the deny list", () => {
    check(
      fc.property(withContext(DENY_LISTED), ({ command, expected }) => {
        expect(perm.denyListEntry(command)).toBe(expected);
        expect(decide(command)).toEqual({
          action: "deny",
          gate: "deny list",
          message: `Permission denied by the deny list: '${expected}' is never allowed.`,
        });
      }),
      runs,
    );
  });

  it("a destructive command in any harmless context asks", () => {
    check(
      fc.property(withContext(DESTRUCTIVE), ({ command, expected }) => {
        expect(perm.denyListEntry(command)).toBeNull();
        const reason = `Potentially destructive command: ${expected}`;
        expect(perm.destructiveReason(command)).toBe(reason);
        expect(decide(command)).toEqual({ action: "ask", reason });
      }),
      runs,
    );
  });

  it("control: harmless commands, dangerous words only as arguments, in the same contexts, run", () => {
    check(
      fc.property(wrapped(harmlessCore), (command) => {
        expect(perm.denyListEntry(command)).toBeNull();
        expect(perm.destructiveReason(command)).toBeNull();
        expect(decide(command)).toEqual({ action: "run" });
      }),
      runs,
    );
  });
});

// =======================================================================================
// 3. Path confinement (s02+)
// =======================================================================================

/**
 * The real path of an absolute path, computed here without realpath: one component at a
 * time with lstat and readlink, `..` taken physically after a link, a missing component
 * (a new file, a dangling link's target) and everything after it appended as written.
 */
function realPathByHand(absolute: string): string {
  const pending = absolute.split("/").filter(Boolean);
  let current = "/";
  let missing = false;
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    if (missing) {
      current = next;
      continue;
    }
    let stats: ReturnType<typeof lstatSync> | undefined;
    try {
      stats = lstatSync(next);
    } catch {
      stats = undefined;
    }
    if (!stats) {
      missing = true;
      current = next;
    } else if (stats.isSymbolicLink()) {
      if (++links > 40) throw new Error(`link loop at ${next}`);
      const target = readlinkSync(next);
      pending.unshift(...target.split("/").filter(Boolean));
      if (target.startsWith("/")) current = "/";
    } else current = next;
  }
  return current;
}

/** The names a generated path is made of: the tree's, and names that exist nowhere. */
const SEGMENTS = [
  ".",
  "..",
  "src",
  "lib",
  "a.ts",
  "b.ts",
  "docs",
  "file.txt",
  "in-dir",
  "in-rel",
  "in-file",
  "in-dangling",
  "out-dir",
  "out-file",
  "out-dangling",
  "up",
  "sibling",
  "tricky",
  "work",
  "work2",
  "outside",
  "secret.txt",
  "sub",
  "x.txt",
  "new",
  "new.txt",
];

const PATH_CHAPTERS = moduleVersions("s02", ["paths.ts"]);
describe.each(PATH_CHAPTERS)("$id path confinement properties", (chapter) => {
  const runs = runsFor(chapter, PATH_CHAPTERS, 400, 60);
  let paths: typeof PathsModule;
  let root: string;
  let work: string;
  let alias: string;
  beforeAll(async () => {
    paths = await importChapter<typeof PathsModule>(chapter, "paths.ts");
    // root/work is the workspace, root/alias a link to it; root/work2 shares its prefix.
    root = tempWorkspace("properties-paths");
    work = path.join(root, "work");
    alias = path.join(root, "alias");
    const outside = path.join(root, "outside");
    for (const dir of ["work/src/lib", "work/docs", "outside/sub", "work2"]) {
      mkdirSync(path.join(root, dir), { recursive: true });
    }
    for (const file of ["work/src/a.ts", "work/src/lib/b.ts", "work/docs/x.txt", "work/file.txt"]) {
      writeFileSync(path.join(root, file), "inside\n");
    }
    writeFileSync(path.join(outside, "secret.txt"), "secret\n");
    writeFileSync(path.join(root, "work2", "x.txt"), "prefix sibling\n");
    const links: Array<[string, string]> = [
      ["work/in-dir", path.join(work, "src")], // inside folder, absolute
      ["work/in-rel", "src/lib"], // inside folder, relative
      ["work/in-file", "file.txt"], // inside file
      ["work/in-dangling", path.join(work, "not-yet", "new.txt")], // dangling, inside
      ["work/out-dir", outside], // outside folder
      ["work/out-file", path.join(outside, "secret.txt")], // outside file
      ["work/out-dangling", path.join(outside, "missing", "new.txt")], // dangling, outside
      ["work/up", ".."], // the workspace's parent
      ["work/sibling", path.join(root, "work2")], // a folder whose name extends the workspace's
      ["work/src/lib/back", "../.."], // back to the workspace, from a sub-folder
      ["alias", "work"],
      // A dangling link whose target has `..` after a link: the system reads it one
      // segment at a time (up → root, .. → root's parent), so it leads to root/outside.
      ["work/tricky", `up/../${path.basename(root)}/outside/new.txt`],
    ];
    for (const [link, target] of links) symlinkSync(target, path.join(root, link));
  });

  const pathArb = () =>
    fc
      .tuple(
        fc.constantFrom("", "", "", "/", `${root}/`, `${work}/`, `${alias}/`, `${root}/work2/`),
        fc.array(fc.constantFrom(...SEGMENTS, "back"), { maxLength: 6 }),
        fc.constantFrom("/", "/", "/", "//"),
        fc.constantFrom("", "", "/"),
      )
      .map(([prefix, segments, joiner, end]) => `${prefix}${segments.join(joiner)}${end}`);

  it("isInside(resolveInWorkspace(ws, p), ws) exactly when p's real path is in the workspace", () => {
    let inside = 0;
    let outsideCount = 0;
    check(
      fc.property(fc.constantFrom("work", "alias"), pathArb(), (which, p) => {
        const ws = which === "work" ? work : alias;
        const resolved = paths.resolveInWorkspace(ws, p);
        // What the tools open: the resolved path (no `..` left), its links followed.
        const real = realPathByHand(resolved);
        const realWs = realPathByHand(ws);
        const expected = real === realWs || real.startsWith(`${realWs}/`);
        expect(paths.isInside(resolved, ws), `${p} → ${real}`).toBe(expected);
        expect(paths.realPathOf(resolved)).toBe(real);
        if (expected) inside++;
        else outsideCount++;
      }),
      runs,
    );
    // Both answers occur often: the property does not hold by answering one way.
    expect(inside).toBeGreaterThan(runs / 10);
    expect(outsideCount).toBeGreaterThan(runs / 10);
  });

  it("the workspace's own real path is inside, a sibling sharing its prefix is not", () => {
    expect(paths.isInside(work, alias)).toBe(true);
    expect(paths.isInside(realpathSync(alias), work)).toBe(true);
    expect(paths.isInside(path.join(root, "work2", "x.txt"), work)).toBe(false);
  });
});
