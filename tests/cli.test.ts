/**
 * End-to-end smoke runs: each chapter started with `pnpm --filter sNN start`, prompts
 * piped in, the fake server as ANTHROPIC_BASE_URL (DESIGN §4). A process start costs
 * 1–2 s here, so there are only a few per chapter.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { reply, ScriptedModel, type ScriptStep, startFakeServer, text, toolUse } from "shared";
import { describe, expect, it } from "vitest";
import { BASE_TOOLS, chaptersFrom } from "./chapters.ts";
import { runPnpm } from "./helpers/cli.ts";
import { afterTools, lastToolResults, tempWorkspace, writeFiles } from "./helpers/run.ts";

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

/** One run per mechanism whose issue asked for a command-line check of its own. */
describe.concurrent("mechanisms from the command line", () => {
  async function start(
    id: string,
    steps: ScriptStep[],
    input: string,
    files: Record<string, string> = {},
  ) {
    const workdir = tempWorkspace(`cli-${id}`);
    writeFiles(workdir, files);
    const server = await startFakeServer({ model: new ScriptedModel(steps) });
    try {
      const run = await runPnpm(["--silent", "--filter", id, "start"], {
        input,
        env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "cli-key", WORKDIR: workdir },
      });
      const requests = server.requests.map((r) => r.body as Anthropic.MessageCreateParams);
      return { ...run, requests, workdir };
    } finally {
      await server.close();
    }
  }
  const names = (r: Anthropic.MessageCreateParams) =>
    (r.tools as Anthropic.Tool[]).map((t) => t.name);

  it("s03 denies an approval on piped stdin and lets an allow rule through", async () => {
    const run = await start(
      "s03",
      [
        {
          reply: reply(
            toolUse("bash", { command: "rm a.txt" }),
            toolUse("bash", { command: "rm b.txt" }),
          ),
        },
        { when: afterTools, reply: reply(text("done")) },
      ],
      "remove both\n",
      {
        "a.txt": "a",
        "b.txt": "b",
        ".claude/settings.json": JSON.stringify({ permissions: { allow: ["Bash(rm b.txt)"] } }),
      },
    );
    expect(run.stdout).toContain("[denied] Permission denied: approval needed");
    expect(existsSync(path.join(run.workdir, "a.txt"))).toBe(true);
    expect(existsSync(path.join(run.workdir, "b.txt"))).toBe(false);
  });

  it("s04 runs a command hook from .claude/settings.json", async () => {
    const run = await start(
      "s04",
      [
        { reply: reply(toolUse("bash", { command: "echo hi" })) },
        { when: afterTools, reply: reply(text("done")) },
      ],
      "go\n",
      {
        ".claude/settings.json": JSON.stringify({
          hooks: {
            PreToolUse: [
              { matcher: "Bash", hooks: [{ type: "command", command: "cat > hook-input.json" }] },
            ],
          },
        }),
      },
    );
    const input = JSON.parse(readFileSync(path.join(run.workdir, "hook-input.json"), "utf8"));
    expect(input).toMatchObject({
      hook_event_name: "PreToolUse",
      tool_name: "bash",
      tool_input: { command: "echo hi" },
    });
    expect(run.stdout).toContain("[hook] PreToolUse (matcher Bash): cat > hook-input.json");
  });

  it("s06 starts the subagent from fresh messages without the task tool", async () => {
    const isChild = (r: Anthropic.MessageCreateParams) => !names(r).includes("task");
    const run = await start(
      "s06",
      [
        {
          when: (r) => !isChild(r) && r.messages.length === 1,
          reply: reply(toolUse("task", { prompt: "Count to three." })),
        },
        { when: isChild, reply: reply(text("one two three")) },
        {
          when: (r) => !isChild(r) && lastToolResults(r).length > 0,
          reply: reply(text("the child counted")),
        },
      ],
      "delegate\n",
    );
    const child = run.requests.filter(isChild);
    expect(child).toHaveLength(1);
    expect(child[0]!.messages).toEqual([{ role: "user", content: "Count to three." }]);
    expect(names(child[0]!)).toEqual(BASE_TOOLS);
    expect(lastToolResults(run.requests.at(-1)!)[0]?.content).toBe("one two three");
    expect(run.stdout).toContain("  [sub] ");
  });

  it("s07 sends the catalog, not the body, and load_skill returns the whole file", async () => {
    const skill =
      "---\nname: greet\ndescription: Greet people properly.\n---\n# Greet\nSECRET-BODY-LINE\n";
    const run = await start(
      "s07",
      [
        {
          when: (r) => r.messages.length === 1,
          reply: reply(toolUse("load_skill", { name: "greet" })),
        },
        { when: afterTools, reply: reply(text("loaded")) },
      ],
      "greet me\n",
      { "skills/greet/SKILL.md": skill },
    );
    expect(run.requests[0]!.system).toContain("- greet: Greet people properly.");
    expect(String(run.requests[0]!.system)).not.toContain("SECRET-BODY-LINE");
    expect(lastToolResults(run.requests[1]!)[0]?.content).toBe(skill);
  });
});
