/**
 * End-to-end smoke runs: each chapter started with `pnpm --filter sNN start`, prompts
 * piped in, the fake server as ANTHROPIC_BASE_URL (DESIGN §4). A process start costs
 * 1–2 s here, so there are only a few per chapter.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { reply, ScriptedModel, startFakeServer, text, toolUse } from "shared";
import { describe, expect, it } from "vitest";
import { chaptersFrom } from "./chapters.ts";
import { runPnpm } from "./helpers/cli.ts";
import { afterTools, lastToolResults, tempWorkspace } from "./helpers/run.ts";

describe.concurrent.each(chaptersFrom("s01"))("$id from the command line", (chapter) => {
  it("runs piped prompts against a configured endpoint with the real SDK", async () => {
    const workdir = tempWorkspace(`cli-${chapter.id}`);
    const model = new ScriptedModel([
      {
        reply: reply(
          text("Writing it."),
          toolUse("bash", { command: "echo 日本語 > out.txt && cat out.txt" }),
        ),
      },
      { when: afterTools, reply: reply(text("Wrote out.txt.")) },
      { reply: reply(text("Second answer.")) },
    ]);
    const server = await startFakeServer({ model });
    try {
      const run = await runPnpm(["--silent", "--filter", chapter.id, "start"], {
        input: "write the file\nand again\n",
        env: {
          ANTHROPIC_BASE_URL: server.url,
          ANTHROPIC_AUTH_TOKEN: "cli-token",
          WORKDIR: workdir,
        },
      });
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`${chapter.id}: ${chapter.title}`);
      expect(run.stdout).toContain(`${chapter.id} >> write the file`);
      expect(run.stdout).toContain("Wrote out.txt.");
      expect(run.stdout).toContain("Second answer.");
      expect(readFileSync(path.join(workdir, "out.txt"), "utf8")).toBe("日本語\n");
      expect(server.requests.map((r) => r.rejected)).toEqual([null, null, null]);
      expect(server.requests[0]!.headers.authorization).toBe("Bearer cli-token");
      expect(lastToolResults(server.requests[1]!.body as never)[0]?.content).toBe("日本語");
      expect(readdirSync(path.join(workdir, ".harness", "logs"))).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});

describe("the offline fallback", () => {
  it("s01 runs its demo when nothing is configured", async () => {
    const chapter = chaptersFrom("s01")[0]!;
    const run = await runPnpm(["--silent", "--filter", chapter.id, "start"], {
      // Empty values beat a developer's .env (the real environment wins).
      env: { ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "", ANTHROPIC_BASE_URL: "" },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("No model configured: running this chapter's offline demo.");
    expect(run.stdout).toContain(`Offline demo (${chapter.id})`);
    expect(run.stdout).not.toMatch(/API error|scripted model: no step left/);
    const kept = /workspace is kept at (\S+)/.exec(run.stdout)?.[1];
    expect(kept && existsSync(path.join(kept, ".harness", "logs"))).toBe(true);
  });
});

describe("configuration errors", () => {
  it("exit 1 with one line naming the problem", async () => {
    const run = await runPnpm(["--silent", "--filter", "s01", "start"], {
      env: { ANTHROPIC_API_KEY: "k", WORKDIR: "/no/such/place" },
    });
    expect(run.code).toBe(1);
    // pnpm adds its own failure note after the chapter's line.
    expect(run.stderr.split("\n")[0]).toBe(
      "s01: configuration error: WORKDIR does not exist: /no/such/place",
    );
    expect(run.stdout).not.toContain("s01 >>");
  });
});
