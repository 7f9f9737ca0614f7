/**
 * The session log records each request by what changed since the previous request of its
 * scope (shared/src/log.ts). These tests rebuild every request from the log and compare it
 * with what the fake API actually received, through each chapter's real `main`, with
 * compaction rewriting the history (s08+) and side calls and a subagent in between.
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { createSessionLog, readRequests } from "shared";
import {
  type MessageRequest,
  offersTools,
  reply,
  type ScriptedAnswer,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { describe, expect, it } from "vitest";
import { CHAPTERS, carried, chaptersFrom, moduleVersions } from "./chapters.ts";
import { coldDateNow, runChapter, sessionLog } from "./helpers/run.ts";

type Request = Anthropic.MessageCreateParams;
const ROUNDS = 8;

/** Small compaction limits, so s08+ snips and compacts old results during the run. */
const SMALL_LIMITS = {
  L1_COMPACT_SNIP_MAX_MESSAGES: "12",
  L1_COMPACT_SNIP_TARGET_MESSAGES: "8",
  L2_COMPACT_KEEP_RECENT: "1",
};

/** A chapter run against a model that asks for `rounds` bash calls per turn, then answers. */
async function session(chapter: Parameters<typeof runChapter>[0], rounds: number, bytes: number) {
  let round = 0;
  // Six minutes between calls: from s15 compaction rewrites sent messages only once the
  // prompt cache has gone cold, and this session is to show every kind of change.
  const cold = coldDateNow();
  const model = (request: MessageRequest): ScriptedAnswer => {
    cold.step();
    // Side calls (summaries, memory) get a short text; the main loop counts its rounds.
    if (!offersTools(request)) return reply(text("[]"));
    round++;
    if (round % (rounds + 1) === 0) return reply(text(`done at ${round}`));
    return reply(toolUse("bash", { command: `printf '%0${bytes}d' ${round}` }));
  };
  const server = await startFakeServer({ model });
  try {
    return await runChapter(chapter, {
      server,
      prompts: ["count", "again"],
      env: SMALL_LIMITS,
      memoryExtraction: true,
    });
  } finally {
    cold.restore();
    await server.close();
  }
}

// The log is shared/; what a chapter sends it is decided by the loop and the harness.
const LOGGED = moduleVersions("s01", ["loop.ts", "repl.ts", "harness.ts"]);

describe.each(carried(chaptersFrom("s01"), LOGGED))("$id session log", (chapter) => {
  it("rebuilds every request the API received, exactly, from what changed between them", async () => {
    const run = await session(chapter, ROUNDS / 2, 300);
    // As sent, cache markers and all (run.requests shows them without, as the model's view).
    const received = run.received
      .filter((r) => r.rejected === null)
      .map((r) => JSON.parse(r.rawBody) as Request);
    expect(received.length).toBeGreaterThanOrEqual(ROUNDS);
    const { api } = sessionLog(run.workdir);
    const rebuilt = readRequests(api).map((entry) => entry.params);
    expect(rebuilt).toEqual(received);
    // From s08 on, compaction rewrote the history in between: the rebuild covered that too.
    const compacts = chaptersFrom("s08").some((c) => c.id === chapter.id);
    expect(api.includes('"kind":"compact_archive"')).toBe(compacts);
  });
});

// The format is shared's: one chapter (the last, which logs the most kinds of record) shows it.
describe("session log size", () => {
  it("writes each message once: the log grows with the session, not with its square", async () => {
    const chapter = CHAPTERS.at(-1)!;
    const logBytes = async (rounds: number) =>
      Buffer.byteLength(sessionLog((await session(chapter, rounds, 2000)).workdir).api);
    const small = await logBytes(6);
    const large = await logBytes(24);
    // Four times the rounds: about four times the log (a whole request per round would be ~16x).
    expect(large / small).toBeLessThan(5);
  });
});

// A message is serialised once and reused while it is the same object with the same content.
describe("session log reuse", () => {
  it("notices a message whose content was replaced on the same object", () => {
    const workdir = mkdtempSync(path.join(os.tmpdir(), "harness-log-"));
    try {
      const log = createSessionLog({ workdir });
      const messages: Anthropic.MessageParam[] = [
        { role: "user", content: "first" },
        { role: "assistant", content: [{ type: "text", text: "ok" }] },
        { role: "user", content: [{ type: "text", text: "second" }] },
      ];
      const params = (): Request => ({
        model: "m",
        max_tokens: 1,
        messages: structuredClone(messages),
      });
      const sent = [params()];
      log.request({ model: "m", max_tokens: 1, messages });
      messages[2]!.content = [{ type: "text", text: "second, edited" }];
      sent.push(params());
      log.request({ model: "m", max_tokens: 1, messages });
      messages.push({ role: "assistant", content: "done" });
      sent.push(params());
      log.request({ model: "m", max_tokens: 1, messages });
      const api = readFileSync(log.apiPath, "utf8");
      expect(readRequests(api).map((entry) => entry.params)).toEqual(sent);
      // Only what changed is written: the edited message once, then the new one alone.
      const keeps = api
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line).data.keep);
      expect(keeps).toEqual([0, 2, 3]);
    } finally {
      rmSync(workdir, { recursive: true, force: true });
    }
  });
});
