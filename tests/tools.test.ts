/**
 * The file tools, the dispatch map and the workspace refusal, run against every chapter
 * from s02 on. Each test gets a fresh temporary WORKDIR; tool calls go through the
 * chapter's real loop (parse, guard, run) and the real SDK client to the fake Messages API,
 * which refuses any request the real API would refuse.
 */
import fs from "node:fs";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import {
  createAnthropic,
  createModelClient,
  type MessageParams,
  nullLog,
  type ToolContext,
  toolMap,
  UsageMeter,
} from "shared";
import {
  type FakeServer,
  reply,
  type ScriptedAnswer,
  type ScriptedReply,
  startFakeServer,
  text,
  toolUse,
} from "shared/testing";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { chaptersFrom, importChapter, moduleVersions } from "./chapters.ts";
import { baseTools, TEST_TEMP } from "./helpers/run.ts";

type ToolsModule = typeof import("../chapters/s02-tools/src/tools.ts");
type PathsModule = typeof import("../chapters/s02-tools/src/paths.ts");
type GuardModule = typeof import("../chapters/s02-tools/src/guard.ts");
type LoopModule = typeof import("../chapters/s02-tools/src/loop.ts");

const TOOL_NAMES = ["bash", "read_file", "write_file", "edit_file", "glob"];
const UNKNOWN_TAIL = `Available tools: ${TOOL_NAMES.join(", ")}`;

type Call = { name: string; input: unknown };

/** A reply as the API would send it; tool_use ids are toolu_1, toolu_2 … in order. */

function toolReply(calls: Call[]): ScriptedReply {
  return reply(
    ...calls.map((call, i) =>
      toolUse(call.name, call.input as Record<string, unknown>, `toolu_${i + 1}`),
    ),
  );
}

function textReply(words: string): ScriptedReply {
  return reply(text(words));
}

/** The replies the fake server gives next, in order (the test sets them per run). */
const replies: ScriptedReply[] = [];
let server: FakeServer;
beforeAll(async () => {
  server = await startFakeServer({
    model: (): ScriptedAnswer => {
      const next = replies.shift();
      if (!next) throw new Error("fake model: no reply left");
      return next;
    },
  });
});
afterAll(() => server.close());

/** The real client against the fake server; records the body of every request it accepted. */
function fakeClient(next: ScriptedReply[]) {
  replies.splice(0, replies.length, ...next);
  const seen = server.requests.length;
  const client = createModelClient({
    anthropic: createAnthropic({ apiKey: "test-key", authToken: null, baseURL: server.url }),
    log: nullLog(),
    usage: new UsageMeter(),
  });
  const requests = {
    get all(): MessageParams[] {
      const mine = server.requests.slice(seen);
      const refused = mine.find((request) => request.rejected !== null);
      if (refused) throw new Error(`the fake API refused a request: ${refused.rejected}`);
      return mine.map((request) => request.body as MessageParams);
    },
  };
  return { client, requests };
}

/** The tool_result blocks of a user message. */
function resultsOf(messageParam: Anthropic.MessageParam | undefined) {
  const results: Anthropic.ToolResultBlockParam[] = [];
  if (!messageParam || typeof messageParam.content === "string") return results;
  for (const block of messageParam.content) if (block.type === "tool_result") results.push(block);
  return results;
}

describe.each(moduleVersions("s02", ["tools.ts", "paths.ts", "loop.ts", "guard.ts"]))(
  "$id file tools and dispatch",
  (chapter) => {
    let tools: ToolsModule;
    let paths: PathsModule;
    let guardModule: GuardModule | null;
    // s02's hard refusal of paths outside WORKDIR (guard.ts) becomes an approval in s03.
    const guarded = chaptersFrom("s02", "workspace refusal").some((c) => c.id === chapter.id);
    let loop: LoopModule;
    let workdir: string;
    const scratch: string[] = [];

    beforeAll(async () => {
      tools = await importChapter<ToolsModule>(chapter, "tools.ts");
      paths = await importChapter<PathsModule>(chapter, "paths.ts");
      guardModule = guarded ? await importChapter<GuardModule>(chapter, "guard.ts") : null;
      loop = await importChapter<LoopModule>(chapter, "loop.ts");
    });

    const tempDir = (prefix: string) => {
      const made = fs.realpathSync(fs.mkdtempSync(path.join(TEST_TEMP, prefix)));
      scratch.push(made);
      return made;
    };

    beforeEach(() => {
      workdir = tempDir("s02-tools-test-");
    });

    afterEach(() => {
      for (const made of scratch.splice(0)) fs.rmSync(made, { recursive: true, force: true });
    });

    const file = (relative: string, content: string | Buffer = "") => {
      const target = path.join(workdir, relative);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content);
    };
    const readBack = (relative: string) => fs.readFileSync(path.join(workdir, relative), "utf8");

    /** Runs one model reply's calls through the real loop; returns what the model got back. */
    async function runCalls(calls: Call[]) {
      const { client, requests } = fakeClient([toolReply(calls), textReply("done")]);
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "go" }];
      const result = await loop.agentLoop(messages, {
        client,
        model: "claude-test",
        tools: toolMap(await baseTools(chapter, 10_000)),
        system: "test",
        scope: "main",
        workdir,
        emit: () => {},
        seams: guardModule ? [{ beforeToolCall: guardModule.guard }] : [],
      });
      return { result, messages, requests: requests.all, results: resultsOf(messages[2]) };
    }

    /** One tool call through the loop: its result text and error flag. */
    async function use(name: string, input: unknown) {
      const { results } = await runCalls([{ name, input }]);
      expect(results).toHaveLength(1);
      return { content: results[0]!.content, isError: results[0]!.is_error === true };
    }

    const ok = (content: string) => ({ content, isError: false });
    const err = (content: string) => ({ content, isError: true });

    describe("workspace paths", () => {
      it("resolves paths against WORKDIR", () => {
        expect(paths.resolveInWorkspace(workdir, "a/b.txt")).toBe(path.join(workdir, "a", "b.txt"));
        expect(paths.resolveInWorkspace(workdir, ".")).toBe(workdir);
      });

      it.runIf(guarded)(
        "refuses .. and absolute paths outside, with the path as given",
        async () => {
          expect(await use("read_file", { path: "../outside.txt" })).toEqual(
            err("Error: Path escapes workspace: ../outside.txt"),
          );
          expect(await use("read_file", { path: "/etc/passwd" })).toEqual(
            err("Error: Path escapes workspace: /etc/passwd"),
          );
        },
      );

      it("accepts an absolute path inside WORKDIR", async () => {
        file("in.txt", "inside");
        expect(await use("read_file", { path: path.join(workdir, "in.txt") })).toEqual(
          ok("inside"),
        );
      });

      it("does not count a sibling with the same prefix as inside", () => {
        expect(paths.isInside(`${workdir}2`, workdir)).toBe(false);
        expect(paths.isInside(path.join(workdir, "x", "y"), workdir)).toBe(true);
        expect(paths.isInside(workdir, workdir)).toBe(true);
      });

      it("ends a symlink loop instead of following it forever, and keeps it where it is", () => {
        fs.symlinkSync("b", path.join(workdir, "a"));
        fs.symlinkSync("a", path.join(workdir, "b"));
        fs.symlinkSync("self", path.join(workdir, "self"));
        // A loop longer than the limit on links followed (40), leaving the workspace at the end.
        const outside = tempDir("s02-outside-");
        for (let i = 0; i < 45; i++) fs.symlinkSync(`l${i + 1}`, path.join(workdir, `l${i}`));
        fs.symlinkSync(path.join(outside, "x"), path.join(workdir, "l45"));
        for (const name of ["a/x", "self/y"]) {
          expect(paths.isInside(path.join(workdir, name), workdir), name).toBe(true);
        }
        expect(paths.realPathOf(path.join(workdir, "self", "y"))).toBe(
          path.join(workdir, "self", "y"),
        );
        // Forty links are followed; the rest of the chain is taken as it stands.
        expect(paths.realPathOf(path.join(workdir, "l0"))).not.toBe(path.join(outside, "x"));
        expect(paths.realPathOf(path.join(workdir, "l5"))).toBe(path.join(outside, "x"));
      });

      it("realPathOf resolves the deepest existing ancestor of a new path", () => {
        const outside = tempDir("s02-outside-");
        fs.symlinkSync(outside, path.join(workdir, "out"));
        expect(paths.realPathOf(path.join(workdir, "new", "f.txt"))).toBe(
          path.join(workdir, "new", "f.txt"),
        );
        expect(paths.realPathOf(path.join(workdir, "out", "new", "f.txt"))).toBe(
          path.join(outside, "new", "f.txt"),
        );
      });
    });

    describe("symlinks that leave the workspace", () => {
      let outside: string;
      beforeEach(() => {
        outside = tempDir("s02-outside-");
        fs.writeFileSync(path.join(outside, "secret.txt"), "secret");
        fs.symlinkSync(outside, path.join(workdir, "out"));
        fs.symlinkSync(path.join(outside, "secret.txt"), path.join(workdir, "secret-link.txt"));
        fs.symlinkSync(path.join(outside, "missing.txt"), path.join(workdir, "dangling.txt"));
      });

      it.runIf(guarded)("refuses read, write and edit through a directory link", async () => {
        expect(await use("read_file", { path: "out/secret.txt" })).toEqual(
          err("Error: Path escapes workspace: out/secret.txt"),
        );
        expect(await use("write_file", { path: "out/new.txt", content: "x" })).toEqual(
          err("Error: Path escapes workspace: out/new.txt"),
        );
        expect(
          await use("edit_file", { path: "out/secret.txt", old_text: "secret", new_text: "x" }),
        ).toEqual(err("Error: Path escapes workspace: out/secret.txt"));
        expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret");
        expect(fs.existsSync(path.join(outside, "new.txt"))).toBe(false);
      });

      it.runIf(guarded)("refuses a file link and a dangling link that point outside", async () => {
        expect(await use("read_file", { path: "secret-link.txt" })).toEqual(
          err("Error: Path escapes workspace: secret-link.txt"),
        );
        expect(await use("write_file", { path: "dangling.txt", content: "x" })).toEqual(
          err("Error: Path escapes workspace: dangling.txt"),
        );
        expect(fs.existsSync(path.join(outside, "missing.txt"))).toBe(false);
      });

      it("allows a link that stays inside", async () => {
        file("real/data.txt", "data");
        fs.symlinkSync(path.join(workdir, "real"), path.join(workdir, "alias"));
        expect(await use("read_file", { path: "alias/data.txt" })).toEqual(ok("data"));
      });
    });

    describe("read_file", () => {
      it("returns the text with splitlines semantics", async () => {
        file("a.txt", "line1\nline2");
        expect(await use("read_file", { path: "a.txt" })).toEqual(ok("line1\nline2"));
        file("b.txt", "line1\nline2\n");
        expect(await use("read_file", { path: "b.txt" })).toEqual(ok("line1\nline2"));
        file("crlf.txt", "a\r\nb\r\n");
        expect(await use("read_file", { path: "crlf.txt" })).toEqual(ok("a\nb"));
        file("breaks.txt", "a\rb\fc\u2028d\n\n");
        expect(await use("read_file", { path: "breaks.txt" })).toEqual(ok("a\nb\nc\nd\n"));
        file("empty.txt", "");
        expect(await use("read_file", { path: "empty.txt" })).toEqual(ok(""));
      });

      it("stops at limit and says how many lines are left", async () => {
        file("d.txt", "a\nb\nc\nd\n");
        expect(await use("read_file", { path: "d.txt", limit: 2 })).toEqual(
          ok("a\nb\n... (2 more lines)"),
        );
        expect(await use("read_file", { path: "d.txt", limit: 4 })).toEqual(ok("a\nb\nc\nd"));
        expect(await use("read_file", { path: "d.txt", limit: 9 })).toEqual(ok("a\nb\nc\nd"));
      });

      it("reads the whole file for limit 0 and negative limits", async () => {
        file("d.txt", "a\nb\nc\n");
        expect(await use("read_file", { path: "d.txt", limit: 0 })).toEqual(ok("a\nb\nc"));
        expect(await use("read_file", { path: "d.txt", limit: -2 })).toEqual(ok("a\nb\nc"));
      });

      it("pages with offset", async () => {
        file("ten.txt", `${Array.from({ length: 10 }, (_, i) => `l${i}`).join("\n")}\n`);
        expect(await use("read_file", { path: "ten.txt", offset: 3, limit: 2 })).toEqual(
          ok("l3\nl4\n... (5 more lines)"),
        );
        expect(await use("read_file", { path: "ten.txt", offset: 8 })).toEqual(ok("l8\nl9"));
        expect(await use("read_file", { path: "ten.txt", offset: 8, limit: 5 })).toEqual(
          ok("l8\nl9"),
        );
        expect(await use("read_file", { path: "ten.txt", offset: 10 })).toEqual(
          ok("(file has 10 lines)"),
        );
        expect(await use("read_file", { path: "ten.txt", offset: 99, limit: 1 })).toEqual(
          ok("(file has 10 lines)"),
        );
      });

      it("decodes invalid UTF-8 with replacement characters", async () => {
        file("bin.txt", Buffer.from([0x61, 0xff, 0x62, 0xc3, 0x0a]));
        expect(await use("read_file", { path: "bin.txt" })).toEqual(ok("a\uFFFDb\uFFFD"));
      });

      it("reports a missing file and a directory as errors", async () => {
        expect(await use("read_file", { path: "missing.txt" })).toEqual(
          err(
            `Error: ENOENT: no such file or directory, open '${path.join(workdir, "missing.txt")}'`,
          ),
        );
        fs.mkdirSync(path.join(workdir, "folder"));
        expect(await use("read_file", { path: "folder" })).toEqual(
          err("Error: EISDIR: illegal operation on a directory, read"),
        );
      });

      it("rejects non-integer offset and limit, ignores unknown keys", async () => {
        file("a.txt", "x");
        expect(await use("read_file", { path: "a.txt", offset: 1.5 })).toEqual(
          err("Error: Invalid input for read_file: offset must be an integer"),
        );
        expect(await use("read_file", { path: "a.txt", limit: "5" })).toEqual(
          err("Error: Invalid input for read_file: limit must be an integer"),
        );
        expect(await use("read_file", { path: "a.txt", offset: -1 })).toEqual(
          err("Error: Invalid input for read_file: offset must be 0 or more"),
        );
        expect(await use("read_file", { path: "a.txt", extra: true })).toEqual(ok("x"));
      });
    });

    describe("write_file", () => {
      it("writes, reports UTF-8 bytes and creates parent folders", async () => {
        expect(await use("write_file", { path: "hello.txt", content: "hello" })).toEqual(
          ok("Wrote 5 bytes to hello.txt"),
        );
        expect(readBack("hello.txt")).toBe("hello");
        expect(await use("write_file", { path: "a/b/c/deep.txt", content: "deep" })).toEqual(
          ok("Wrote 4 bytes to a/b/c/deep.txt"),
        );
        expect(readBack("a/b/c/deep.txt")).toBe("deep");
        expect(await use("write_file", { path: "e.txt", content: "é" })).toEqual(
          ok("Wrote 2 bytes to e.txt"),
        );
      });

      it("round-trips Japanese and Chinese text", async () => {
        const text = "こんにちは\n你好，世界\n";
        expect(await use("write_file", { path: "cjk.txt", content: text })).toEqual(
          ok("Wrote 32 bytes to cjk.txt"),
        );
        expect(readBack("cjk.txt")).toBe(text);
        expect(await use("read_file", { path: "cjk.txt" })).toEqual(ok("こんにちは\n你好，世界"));
        expect(
          await use("edit_file", { path: "cjk.txt", old_text: "世界", new_text: "世界！" }),
        ).toEqual(ok("Edited cjk.txt"));
        expect(readBack("cjk.txt")).toBe("こんにちは\n你好，世界！\n");
      });

      it.runIf(guarded)("refuses a path outside", async () => {
        expect(await use("write_file", { path: "../escape.txt", content: "x" })).toEqual(
          err("Error: Path escapes workspace: ../escape.txt"),
        );
      });

      it("checks its input", async () => {
        expect(await use("write_file", { path: "a.txt" })).toEqual(
          err("Error: Invalid input for write_file: content is required"),
        );
        expect(await use("write_file", { path: "a.txt", content: 5 })).toEqual(
          err("Error: Invalid input for write_file: content must be a string"),
        );
      });
    });

    describe("edit_file", () => {
      const edit = (old_text: string, new_text: string) =>
        use("edit_file", { path: "f.txt", old_text, new_text });

      it("replaces the first occurrence only", async () => {
        file("f.txt", "foo bar foo");
        expect(await edit("foo", "baz")).toEqual(ok("Edited f.txt"));
        expect(readBack("f.txt")).toBe("baz bar foo");
        file("f.txt", "abcabcab abc");
        await edit("abc", "def");
        expect(readBack("f.txt")).toBe("defabcab abc");
      });

      it("inserts replacement text literally", async () => {
        file("f.txt", "abc");
        await edit("b", "$&$'");
        expect(readBack("f.txt")).toBe("a$&$'c");
      });

      it("keeps CRLF elsewhere and prepends for empty old_text", async () => {
        file("f.txt", "a\r\nfoo\r\nb\r\n");
        await edit("foo", "bar");
        expect(readBack("f.txt")).toBe("a\r\nbar\r\nb\r\n");
        file("f.txt", "body");
        expect(await edit("", "head ")).toEqual(ok("Edited f.txt"));
        expect(readBack("f.txt")).toBe("head body");
      });

      it("reports absent text and a missing file, leaving files untouched", async () => {
        file("f.txt", "abc");
        expect(await edit("zzz", "y")).toEqual(err("Error: text not found in f.txt"));
        expect(readBack("f.txt")).toBe("abc");
        expect(await use("edit_file", { path: "nope.txt", old_text: "a", new_text: "b" })).toEqual(
          err(`Error: ENOENT: no such file or directory, open '${path.join(workdir, "nope.txt")}'`),
        );
        expect(await use("edit_file", { path: "f.txt", old_text: 1, new_text: "b" })).toEqual(
          err("Error: Invalid input for edit_file: old_text must be a string"),
        );
      });
    });

    describe("glob", () => {
      const glob = (pattern: string) => use("glob", { pattern });

      it("lists matching files sorted, or says there are none", async () => {
        file("b.txt");
        file("a.txt");
        file("sub/c.txt");
        expect(await glob("*.txt")).toEqual(ok("a.txt\nb.txt"));
        expect(await glob("*.md")).toEqual(ok("(no matches)"));
      });

      it("lists files only, never folders", async () => {
        file("a.txt");
        file("sub/inner.txt");
        expect(await glob("*")).toEqual(ok("a.txt"));
      });

      it("never lists outside the workspace", async () => {
        file("a.txt");
        expect(await glob("../*")).toEqual(ok("(no matches)"));
        expect(await glob("/etc/*")).toEqual(ok("(no matches)"));
      });

      it("recurses with **", async () => {
        file("top.x");
        file("a/mid.x");
        file("a/b/deep.x");
        expect(await glob("**/*.x")).toEqual(ok("a/b/deep.x\na/mid.x\ntop.x"));
        expect(await glob("a/**/*.x")).toEqual(ok("a/b/deep.x\na/mid.x"));
      });

      it("skips dot-files and dot-folders unless the pattern names them", async () => {
        file(".git/x.ts");
        file(".harness/logs/y.ts");
        file("src/a.ts");
        file(".env");
        expect(await glob("**/*.ts")).toEqual(ok("src/a.ts"));
        expect(await glob(".git/**/*.ts")).toEqual(ok(".git/x.ts"));
        expect(await glob("*")).toEqual(ok("(no matches)"));
        expect(await glob(".*")).toEqual(ok(".env"));
      });

      it("does not follow a symlink to /etc", async () => {
        file("a.txt");
        fs.symlinkSync("/etc", path.join(workdir, "etclink"));
        expect(await glob("etclink/*")).toEqual(ok("(no matches)"));
        expect(await glob("etclink/**/*")).toEqual(ok("(no matches)"));
        expect(await glob("**/*")).toEqual(ok("a.txt"));
        expect(await glob("**/passwd")).toEqual(ok("(no matches)"));
      });

      it("drops file links that point outside and keeps those inside", async () => {
        const outside = tempDir("s02-outside-");
        fs.writeFileSync(path.join(outside, "s.txt"), "s");
        file("real.txt");
        fs.symlinkSync(path.join(outside, "s.txt"), path.join(workdir, "out.txt"));
        fs.symlinkSync(path.join(workdir, "real.txt"), path.join(workdir, "in.txt"));
        expect(await glob("*.txt")).toEqual(ok("in.txt\nreal.txt"));
      });

      it("prints workspace-relative paths for an absolute pattern inside WORKDIR", async () => {
        file("src/a.ts");
        file("src/lib/b.ts");
        expect(await glob(`${workdir}/src/**/*.ts`)).toEqual(ok("src/a.ts\nsrc/lib/b.ts"));
      });

      it("sorts by code point", async () => {
        file("\uFF5A.txt"); // fullwidth z, U+FF5A
        file("\u{1F600}.txt"); // an emoji, U+1F600: UTF-16 order would put it first
        file("Z.txt");
        file("a.txt");
        expect(await glob("*.txt")).toEqual(ok("Z.txt\na.txt\n\uFF5A.txt\n\u{1F600}.txt"));
      });

      it("caps the list at 1000 paths", async () => {
        // Hard links of one file: creating 1003 files one by one is slow on some disks.
        file("many/f0000.txt");
        for (let i = 1; i < 1003; i++) {
          const name = `many/f${String(i).padStart(4, "0")}.txt`;
          fs.linkSync(path.join(workdir, "many/f0000.txt"), path.join(workdir, name));
        }
        const { content } = await glob("many/*.txt");
        const lines = String(content).split("\n");
        expect(lines).toHaveLength(1001);
        expect(lines[0]).toBe("many/f0000.txt");
        expect(lines[999]).toBe("many/f0999.txt");
        expect(lines[1000]).toBe("... (3 more matches)");
      });
    });

    describe("the tool list and the prompt section", () => {
      it("offers five tools in order, with Claude Code aliases", async () => {
        const list = await baseTools(chapter, 1000);
        expect(list.map((tool) => tool.name)).toEqual(TOOL_NAMES);
        expect(list.map((tool) => tool.aliases)).toEqual([
          ["Bash"],
          ["Read"],
          ["Write"],
          ["Edit"],
          ["Glob"],
        ]);
      });

      it("exports the Files section", () => {
        expect(tools.filesSection("/ws")).toEqual({
          id: "files",
          text: "Files: use read_file, write_file, edit_file and glob for file work instead of shell commands; paths are relative to /ws.",
        });
      });

      it("tools never throw, even when called directly on bad paths", async () => {
        const context: ToolContext = {
          workdir,
          signal: new AbortController().signal,
          scope: "main",
        };
        const [, read, write] = await baseTools(chapter, 1000);
        fs.mkdirSync(path.join(workdir, "dir"));
        await expect(
          read!.run({ path: "dir", offset: null, limit: null }, context),
        ).resolves.toEqual(err("Error: EISDIR: illegal operation on a directory, read"));
        await expect(write!.run({ path: "dir", content: "x" }, context)).resolves.toEqual(
          err(
            `Error: EISDIR: illegal operation on a directory, open '${path.join(workdir, "dir")}'`,
          ),
        );
      });
    });

    describe("dispatch through the loop", () => {
      it("dispatches read_file by name and sends the file back", async () => {
        file("note.txt", "hello\n");
        const { result, requests } = await runCalls([
          { name: "read_file", input: { path: "note.txt" } },
        ]);
        expect(requests).toHaveLength(2);
        const offered = requests[0]!.tools as Anthropic.Tool[];
        expect(offered.map((tool) => tool.name)).toEqual(TOOL_NAMES);
        expect(requests[1]!.messages.at(-1)).toEqual({
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hello" }],
        });
        expect(loop.textOf(result.response)).toBe("done");
      });

      it("runs bash and write_file from one reply, results in call order in one message", async () => {
        const { messages, requests } = await runCalls([
          { name: "bash", input: { command: "printf hi" } },
          { name: "write_file", input: { path: "out.txt", content: "hi" } },
        ]);
        expect(messages).toHaveLength(4);
        expect(requests[1]!.messages.at(-1)).toEqual({
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "hi" },
            { type: "tool_result", tool_use_id: "toolu_2", content: "Wrote 2 bytes to out.txt" },
          ],
        });
        expect(readBack("out.txt")).toBe("hi");
      });

      it("answers an unknown tool with an error and goes on", async () => {
        const { result, results } = await runCalls([{ name: "no_such_tool", input: {} }]);
        expect(results).toEqual([
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: `Error: Unknown tool 'no_such_tool'. ${UNKNOWN_TAIL}`,
            is_error: true,
          },
        ]);
        expect(result.turns).toBe(2);
      });

      it("never finds prototype members as tools", async () => {
        for (const name of ["toString", "constructor", "__proto__"]) {
          expect(await use(name, {})).toEqual(
            err(`Error: Unknown tool '${name}'. ${UNKNOWN_TAIL}`),
          );
        }
      });

      it("turns bad input into an error result", async () => {
        const { result, results } = await runCalls([{ name: "read_file", input: { path: 123 } }]);
        expect(results).toEqual([
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: "Error: Invalid input for read_file: path must be a string",
            is_error: true,
          },
        ]);
        expect(result.stopped).toBe("done");
      });
    });
  },
);
