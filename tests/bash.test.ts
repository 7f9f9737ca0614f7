/**
 * `bash` and the command runner, against every chapter.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type * as BashModule from "../chapters/s01-loop/src/bash.ts";
import { importChapter, moduleVersions } from "./chapters.ts";
import { isAlive } from "./helpers/process.ts";
import { tempWorkspace } from "./helpers/run.ts";

const context = (workdir: string) => ({
  workdir,
  signal: new AbortController().signal,
  scope: "main",
});

describe.each(moduleVersions("s01", ["bash.ts"]))("$id bash", (chapter) => {
  let bash: typeof BashModule;
  let workdir: string;
  const run = async (command: string, timeoutMs = 5000) =>
    bash.bashTool({ timeoutMs }).run({ command }, context(workdir));

  beforeAll(async () => {
    bash = await importChapter<typeof BashModule>(chapter, "bash.ts");
    workdir = tempWorkspace("bash");
  });

  it("returns stdout, runs in WORKDIR, and merges stderr after stdout", async () => {
    expect(await run("echo hi")).toEqual({ content: "hi", isError: false });
    expect((await run("pwd")).content).toBe(workdir);
    expect((await run("echo out; echo err 1>&2")).content).toBe("out\nerr");
  });

  it("says (no output) for a silent command", async () => {
    expect(await run("true")).toEqual({ content: "(no output)", isError: false });
  });

  it("reports a non-zero exit status as an error line before the output", async () => {
    expect(await run("echo nope; exit 3")).toEqual({
      content: "Error: command exited with status 3\nnope",
      isError: true,
    });
    expect((await run("false")).content).toBe("Error: command exited with status 1\n(no output)");
  });

  it("cuts output to exactly 50 000 characters", async () => {
    const result = await run("head -c 60000 /dev/zero | tr '\\0' x");
    expect(result.content).toHaveLength(50_000);
  });

  it("truncates more than 1 MiB of output instead of failing", async () => {
    const result = await run("head -c 3000000 /dev/zero | tr '\\0' y");
    expect(result.isError).toBe(false);
    expect(result.content).toBe("y".repeat(50_000));
  });

  it("keeps at most 1 MiB of each stream before decoding", async () => {
    const raw = await bash.runCommand("head -c 3000000 /dev/zero | tr '\\0' z", {
      cwd: workdir,
      timeoutMs: 5000,
    });
    expect(raw.stdout).toHaveLength(bash.STREAM_CAP_BYTES);
    expect(raw.exitCode).toBe(0);
  });

  it("kills the whole process group on timeout and returns no partial output", async () => {
    const pidFile = path.join(workdir, "grandchild.pid");
    const started = Date.now();
    const result = await run(`echo partial; (sleep 30 & echo $! > ${pidFile}; wait)`, 300);
    expect(result).toEqual({ content: "Error: Timeout (0s)", isError: true });
    expect(Date.now() - started).toBeLessThan(5000);
    const pid = Number(readFileSync(pidFile, "utf8"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(isAlive(pid)).toBe(false); // the grandchild is gone too
  });

  it("names the timeout in whole seconds", async () => {
    const raw = { stdout: "", stderr: "", exitCode: null, signal: null, timedOut: true } as const;
    expect(bash.formatRun({ ...raw, aborted: false, error: null }, 120_000).content).toBe(
      "Error: Timeout (120s)",
    );
  });

  it("decodes invalid UTF-8 with replacement characters", async () => {
    const result = await run("printf 'ok \\377\\376 end'");
    expect(result.content).toBe("ok \uFFFD\uFFFD end");
  });

  it("gives the command an empty, closed stdin", async () => {
    const result = await run("cat; echo after", 3000);
    expect(result.content).toBe("after");
  });

  it("reports a command killed by a signal", async () => {
    const result = await run("kill -TERM $$");
    expect(result).toEqual({
      content: "Error: command killed by signal SIGTERM\n(no output)",
      isError: true,
    });
  });

  it("never splits a surrogate pair at the cut", () => {
    const text = `${"a".repeat(49_999)}😀tail`;
    const cut = bash.limit(text);
    expect(cut).toHaveLength(49_999);
    expect(bash.limit("short")).toBe("short");
  });

  it("stops a command when the turn is aborted", async () => {
    const controller = new AbortController();
    const pending = bash
      .bashTool({ timeoutMs: 10_000 })
      .run({ command: "sleep 20" }, { ...context(workdir), signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    const result = await pending;
    expect(result.content).toBe("Error: command killed by signal SIGKILL\n(no output)");
  });

  it("passes stdin and environment when asked (for hooks and jobs)", async () => {
    const raw = await bash.runCommand('cat; printf " $GREETING"', {
      cwd: workdir,
      timeoutMs: 3000,
      stdin: '{"x":1}',
      env: { ...process.env, GREETING: "hello" },
    });
    expect(raw.stdout).toBe('{"x":1} hello');
  });

  it("returns spawn failures as errors", async () => {
    const result = await bash
      .bashTool({ timeoutMs: 1000 })
      .run({ command: "echo hi" }, context(path.join(workdir, "missing-dir")));
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^Error: /);
    expect(existsSync(path.join(workdir, "missing-dir"))).toBe(false);
  });
});
