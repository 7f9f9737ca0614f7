/**
 * s03.1: working directories besides the workspace (permissions.additionalDirectories). Run
 * it with `pnpm course exercise check s03.1`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  tempWorkspace,
  text,
  toolUse,
  writeFiles,
} from "../../tests/helpers/exercise.ts";

type Settings = Record<string, unknown>;

/**
 * A folder holding the workspace `project/` and its neighbours `shared/` and `shared-old/`;
 * `settings` (and `local`) make the project's settings files from the folder's path.
 */
function layout(settings: (root: string) => Settings, local?: (root: string) => Settings) {
  const root = tempWorkspace("s03-1");
  writeFiles(root, {
    "shared/notes.md": "shared notes\n",
    "shared/secret.txt": "do not read\n",
    "shared-old/notes.md": "old notes\n",
    "project/.claude/settings.json": JSON.stringify(settings(root)),
    ...(local ? { "project/.claude/settings.local.json": JSON.stringify(local(root)) } : {}),
  });
  return { root, workdir: path.join(root, "project") };
}

const SHARED = () => ({ permissions: { additionalDirectories: ["../shared"] } });

/** `calls` in turn (each the next reply's one tool call), then a final answer. */
function session(workdir: string, calls: Array<[string, Record<string, unknown>]>) {
  return runExercise({
    workdir,
    prompts: ["work"],
    steps: [
      ...calls.map(([name, input], i) => ({
        when: (r: Parameters<typeof afterTools>[0]) => (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: afterTools, reply: reply(text("done")) },
    ],
  });
}

/** The result of the `n`th tool call of a session (0-based). */
function result(run: RunOutcome, n: number): { content: string; isError: boolean } {
  const block = lastToolResults(run.requests[n + 1]!)[0]!;
  return { content: String(block.content), isError: block.is_error === true };
}

const NO_TERMINAL =
  "but stdin is not a terminal; an allow rule in .claude/settings.json can permit this call.";

it("reads and writes in an additional directory without asking", async () => {
  const { root, workdir } = layout(SHARED);
  const out = path.join(root, "shared", "out.txt");
  const run = await session(workdir, [
    ["read_file", { path: "../shared/notes.md" }],
    ["write_file", { path: out, content: "hi" }],
  ]);
  expect(result(run, 0)).toEqual({ content: "shared notes", isError: false });
  expect(result(run, 1)).toEqual({ content: `Wrote 2 bytes to ${out}`, isError: false });
  expect(readFileSync(out, "utf8")).toBe("hi");
  expect(run.output).not.toContain("[permission]");
});

it("still asks for a path outside the workspace and every additional directory", async () => {
  const { root, workdir } = layout(SHARED);
  const run = await session(workdir, [["read_file", { path: "../shared-old/notes.md" }]]);
  const old = path.join(root, "shared-old", "notes.md");
  expect(result(run, 0)).toEqual({
    content: `Permission denied: approval needed (Access outside workspace: ${old}) ${NO_TERMINAL}`,
    isError: true,
  });
});

it("keeps deny rules in force inside an additional directory", async () => {
  const { workdir } = layout(() => ({
    permissions: { additionalDirectories: ["../shared"], deny: ["Read(../shared/secret.txt)"] },
  }));
  const run = await session(workdir, [
    ["read_file", { path: "../shared/secret.txt" }],
    ["read_file", { path: "../shared/notes.md" }],
  ]);
  expect(result(run, 0)).toEqual({
    content: "Permission denied by deny rule Read(../shared/secret.txt) in .claude/settings.json.",
    isError: true,
  });
  expect(result(run, 1)).toEqual({ content: "shared notes", isError: false });
});

it("names the additional directories of both settings files in the banner and the system prompt", async () => {
  const { root, workdir } = layout(SHARED, (root) => ({
    permissions: { additionalDirectories: [path.join(root, "shared-old"), "../shared"] },
  }));
  const run = await session(workdir, [["read_file", { path: "../shared-old/notes.md" }]]);
  const shared = path.join(root, "shared");
  const old = path.join(root, "shared-old");
  const lines = run.output.split("\n");
  expect(lines.filter((line) => line.startsWith("[permissions] additional directory:"))).toEqual([
    `[permissions] additional directory: ${shared}`,
    `[permissions] additional directory: ${old}`,
  ]);
  expect(String(run.requests[0]!.system)).toContain(
    `\nAdditional working directories (treated as the workspace): ${shared}, ${old}`,
  );
  expect(result(run, 0)).toEqual({ content: "old notes", isError: false });
});

it("reports an additionalDirectories that is not a list of folders, and ignores it", async () => {
  const { root, workdir } = layout(() => ({
    permissions: { additionalDirectories: "../shared" },
  }));
  const run = await session(workdir, [["read_file", { path: "../shared/notes.md" }]]);
  const file = path.join(root, "project", ".claude", "settings.json");
  expect(run.output).toContain(
    `[settings] ${file}: permissions.additionalDirectories must be a list of folders; ignored`,
  );
  const notes = path.join(root, "shared", "notes.md");
  expect(result(run, 0)).toEqual({
    content: `Permission denied: approval needed (Access outside workspace: ${notes}) ${NO_TERMINAL}`,
    isError: true,
  });
});
