/** `.harness/` state helpers, the session log, the usage meter, the process registry. */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  appendLine,
  createSessionLog,
  endAll,
  harnessDir,
  harnessPath,
  killAll,
  liveChildren,
  logStamp,
  readJournal,
  readJsonState,
  trackChild,
  UsageMeter,
  writeFileAtomic,
} from "../../shared/src/index.ts";
import { isAlive } from "../helpers/process.ts";
import { tempWorkspace } from "../helpers/run.ts";

describe(".harness state helpers", () => {
  it("creates .harness lazily with a .gitignore of *", () => {
    const ws = tempWorkspace("state");
    expect(existsSync(path.join(ws, ".harness"))).toBe(false);
    const file = harnessPath(ws, "memory", "a.md");
    expect(file).toBe(path.join(ws, ".harness", "memory", "a.md"));
    expect(readFileSync(path.join(harnessDir(ws), ".gitignore"), "utf8")).toBe("*\n");
  });

  it("replaces whole files atomically and leaves no temp file", () => {
    const ws = tempWorkspace("state");
    const file = path.join(ws, "cron.json");
    writeFileAtomic(file, "old");
    writeFileAtomic(file, "new");
    expect(readFileSync(file, "utf8")).toBe("new");
    expect(readdirSync(ws)).toEqual(["cron.json"]);
  });

  it("reports a corrupt JSON file with its path and leaves it untouched", () => {
    const ws = tempWorkspace("state");
    const file = path.join(ws, "state.json");
    writeFileSync(file, "{not json");
    const read = readJsonState(file);
    expect(read.status).toBe("corrupt");
    expect(read.status === "corrupt" && read.error).toMatch(`${file}: invalid JSON`);
    expect(readFileSync(file, "utf8")).toBe("{not json");
    expect(readJsonState(path.join(ws, "missing.json"))).toEqual({ status: "missing" });
    writeFileSync(file, "[1]");
    expect(readJsonState(file, (v) => (Array.isArray(v) ? "must be an object" : null))).toEqual({
      status: "corrupt",
      error: `${file}: must be an object`,
    });
  });

  it("appends whole lines and tolerates a torn last line", () => {
    const ws = tempWorkspace("state");
    const file = path.join(ws, "journal.jsonl");
    appendLine(file, JSON.stringify({ n: 1 }));
    appendLine(file, JSON.stringify({ n: 2 }));
    appendFileSync(file, '{"n": 3, "cut');
    expect(readJournal(file)).toEqual({
      records: [{ n: 1 }, { n: 2 }],
      badLines: [],
      tornTail: true,
    });
    expect(() => appendLine(file, "two\nlines")).toThrow("contains a newline");
  });
});

describe("session log", () => {
  it("creates nothing until the first write, then names files by stamp and pid", () => {
    const ws = tempWorkspace("log");
    const clock = () => new Date(2026, 10, 30, 7, 5, 9, 42);
    const log = createSessionLog({ workdir: ws, clock, pid: 4242, secrets: ["sk-very-secret"] });
    expect(existsSync(path.join(ws, ".harness"))).toBe(false);
    log.record("gate", { decision: "deny", key: "sk-very-secret" }, "sub");
    log.transcript("USER", "hello");
    expect(path.basename(log.apiPath)).toBe("2026-11-30T07-05-09-042_4242_api.jsonl");
    const line = JSON.parse(readFileSync(log.apiPath, "utf8")) as Record<string, unknown>;
    expect(line).toMatchObject({ kind: "gate", scope: "sub", data: { key: "[redacted]" } });
    expect(readFileSync(log.transcriptPath, "utf8")).toMatch(/^=== USER \(.*\)\nhello\n\n$/);
    expect(logStamp(clock())).toBe("2026-11-30T07-05-09-042");
    expect(log.sessionId).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe("usage meter", () => {
  it("sums a turn across scopes and resets per turn", () => {
    const meter = new UsageMeter();
    meter.add("main", { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 50 });
    meter.add("sub", { input_tokens: 20, output_tokens: 5 });
    expect(meter.formatTurn()).toBe(
      "[usage] in 120 / out 15 tokens, cache read 50 (2 calls; sub: 1)",
    );
    meter.startTurn();
    expect(meter.formatTurn()).toBeNull();
    expect(meter.sessionTotals()).toMatchObject({ input: 120, output: 15, calls: 2 });
  });
});

describe("child process registry", () => {
  it("kills every tracked process group", async () => {
    const child = spawn("/bin/sh", ["-c", "sleep 30"], { detached: true, stdio: "ignore" });
    trackChild(child);
    expect(liveChildren()).toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isAlive(child.pid!)).toBe(true);
    expect(killAll()).toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => child.once("exit", resolve));
    expect(isAlive(child.pid!)).toBe(false);
    expect(liveChildren()).toBe(0);
  });

  it("ends every group politely: SIGTERM first, SIGKILL for one that ignores it", async () => {
    const spawnTracked = (script: string) => {
      const child = spawn("/bin/sh", ["-c", script], { detached: true, stdio: "ignore" });
      trackChild(child);
      const signal = new Promise<NodeJS.Signals | null>((resolve) =>
        child.once("exit", (_code, sig) => resolve(sig)),
      );
      return { child, signal };
    };
    const polite = spawnTracked("sleep 30");
    const stubborn = spawnTracked("trap '' TERM; sleep 30 & wait; sleep 30");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await endAll(100)).toBe(2);
    expect(await polite.signal).toBe("SIGTERM");
    expect(await stubborn.signal).toBe("SIGKILL");
    expect(isAlive(polite.child.pid!)).toBe(false);
    expect(isAlive(stubborn.child.pid!)).toBe(false);
    expect(liveChildren()).toBe(0);
  });
});
