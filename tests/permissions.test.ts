/**
 * The permission pipeline, against every chapter from s03: the deny list and
 * the destructive-command rule at command position, the workspace rule on real paths,
 * Claude Code settings rules and their precedence, approvals on a terminal, and the
 * fail-closed denial without one.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { type LoopEvent, nullLog, type SessionLog, type ToolDefinition, toolMap } from "shared";
import { reply, text, toolUse } from "shared/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type * as RulesModule from "../chapters/s03-permissions/src/permission-rules.ts";
import type * as PermissionsModule from "../chapters/s03-permissions/src/permissions.ts";
import type * as SettingsModule from "../chapters/s03-permissions/src/settings.ts";
import type * as LoopModule from "../chapters/s17-goal/src/contract.ts";
import {
  carried,
  casesFor,
  chaptersFrom,
  hasContract,
  importChapter,
  moduleVersions,
  unattendedTurns,
} from "./chapters.ts";
import { runContext } from "./helpers/context.ts";
import {
  afterTools,
  baseTools,
  type Capture,
  lastToolResults,
  runChapter,
  tempWorkspace,
  userSaid,
  writeFiles,
} from "./helpers/run.ts";

const bash = (command: string) => ({ id: "toolu_t", name: "bash", input: { command } });
const file = (name: string, p: string) => ({
  id: "toolu_t",
  name,
  input: { path: p, content: "x", old_text: "a", new_text: "b" },
});

// Module-level blocks run only where these modules differ: identical copies prove nothing new.
const MODULE_CHAPTERS = new Set(
  moduleVersions("s03", [
    "permissions.ts",
    "permission-rules.ts",
    "settings.ts",
    "bash.ts",
    "tools.ts",
  ]).map((c) => c.id),
);
// Through the chapter, edge cases run where these modules differ and on the newest chapter;
// the rest of that block runs on every chapter (runsEdgeCases in chapters.ts). permissions.ts
// brings paths.ts (real paths), settings.ts and shell-parse.ts; tools.ts reads and writes
// through the links.
const PERMISSIONS = moduleVersions("s03", ["permissions.ts", "permission-rules.ts", "tools.ts"]);

describe.each(carried(chaptersFrom("s03"), MODULE_CHAPTERS, PERMISSIONS))(
  "$id permissions",
  (chapter) => {
    let perm: typeof PermissionsModule;
    let permRules: typeof RulesModule;
    let settings: typeof SettingsModule;
    let base: ToolDefinition[];
    beforeAll(async () => {
      perm = await importChapter<typeof PermissionsModule>(chapter, "permissions.ts");
      permRules = await importChapter<typeof RulesModule>(chapter, "permission-rules.ts");
      settings = await importChapter<typeof SettingsModule>(chapter, "settings.ts");
      base = await baseTools(chapter);
    });

    const toolsMap = () => toolMap(base);
    const decide = (
      call: { id: string; name: string; input: unknown },
      workdir = "/tmp",
      rules: RulesModule.Rule[] = [],
    ) => perm.decide(call, { workdir, rules, tools: toolsMap() });
    const rulesFrom = (
      workdir: string,
      json: Record<string, unknown>,
      local?: Record<string, unknown>,
    ) => {
      writeFiles(workdir, {
        ".claude/settings.json": JSON.stringify(json),
        ...(local ? { ".claude/settings.local.json": JSON.stringify(local) } : {}),
      });
      return permRules.parseRules(settings.loadSettings(workdir).files);
    };

    if (MODULE_CHAPTERS.has(chapter.id)) {
      describe("Gate 1: the deny list", () => {
        it("keeps the upstream baseline entries", () => {
          const entries = perm.DENY_LIST.map((deny) => deny.entry);
          for (const entry of ["rm -rf /", "sudo", "shutdown", "reboot", "mkfs", "dd if="]) {
            expect(entries).toContain(entry);
          }
        });

        it("is the list the gate reads: an entry added to it is denied, and gone when removed", () => {
          const ws = tempWorkspace("deny");
          const decideCurl = () =>
            perm.decide(bash("curl http://x"), { workdir: ws, rules: [], tools: toolsMap() });
          expect(decideCurl()).toEqual({ action: "run" });
          perm.DENY_LIST.push({ entry: "curl", hits: (word) => word === "curl" });
          try {
            expect(decideCurl()).toMatchObject({ action: "deny", gate: "deny list" });
          } finally {
            perm.DENY_LIST.pop();
          }
          expect(decideCurl()).toEqual({ action: "run" });
        });

        it.each([
          ["sudo ls", "sudo"],
          ["shutdown now", "shutdown"],
          ["reboot", "reboot"],
          ["mkfs.ext4 /dev/sdb1", "mkfs"],
          ["mkfs -t ext4 /dev/sdb1", "mkfs"],
          ["dd if=/dev/zero of=/dev/sda", "dd if="],
          ["rm -rf /", "rm -rf /"],
          ["rm -fr /*", "rm -rf /"],
          ["rm -r -f --no-preserve-root /", "rm -rf /"],
          ["echo x > /dev/sda", "> /dev/sda"],
          ["cd /tmp && sudo make install", "sudo"],
          ["if true; then sudo x; fi", "sudo"],
          ["echo $(sudo id)", "sudo"],
          ["echo `reboot`", "reboot"],
          ["sh -c 'sudo ls'", "sudo"],
          ['bash -lc "shutdown -h now"', "shutdown"],
          ['eval "sudo ls"', "sudo"],
          ["FOO=1 env -i nohup sudo x", "sudo"],
          ["/usr/bin/sudo ls", "sudo"],
          // Wrapper options that take a value are skipped with it.
          ["env -u HOME sudo ls", "sudo"],
          ["env -C /tmp sudo ls", "sudo"],
          ["exec -a name sudo ls", "sudo"],
          ["xargs -I {} sudo rm {}", "sudo"],
          ["time -o t.txt sudo ls", "sudo"],
          ["timeout 5s sudo ls", "sudo"],
          ["timeout -k 1 5 reboot", "reboot"],
          ["nice -n 10 sudo ls", "sudo"],
          ["stdbuf -o0 sudo ls", "sudo"],
          // A `)` inside quotes does not close `$(`.
          ['echo $(echo ")"; sudo ls)', "sudo"],
          // `--` before the script of `bash -c`.
          ["bash -c -- 'sudo ls'", "sudo"],
          ["rm -rf //", "rm -rf /"],
          ["rm -Rf /.", "rm -rf /"],
          ["~/bin/sudo ls", "sudo"],
        ])("denies %j by '%s' without asking, whatever the rules say", (command, entry) => {
          const rules: RulesModule.Rule[] = [
            { kind: "allow", text: "Bash(sudo:*)", tool: "Bash", specifier: "sudo:*", file: "x" },
            { kind: "allow", text: "Bash", tool: "Bash", specifier: null, file: "x" },
          ];
          expect(decide(bash(command), "/tmp", rules)).toEqual({
            action: "deny",
            gate: "deny list",
            message: `Permission denied by the deny list: '${entry}' is never allowed.`,
          });
        });

        it.each([
          "echo sudo",
          'git commit -m "reboot the plan"',
          "cat shutdown.py",
          "grep -r mkfs docs",
          "ls /dev/sda",
          "rm -rf /tmp/x",
          "echo 'rm -rf /'",
        ])("does not deny %j (quoted text and arguments are data)", (command) => {
          expect(decide(bash(command)).action).not.toBe("deny");
        });
      });

      describe("Gate 2: destructive commands at command position", () => {
        it.each([
          ["rm foo", "rm"],
          ["rm -rf ./build", "rm"],
          ["rm -rf /tmp/x", "rm"],
          ["RM -rf build", "rm"],
          ["DEL test.txt", "del"],
          ["del/f test.txt", "del"],
          ["rmdir/s/q build", "rmdir"],
          ["erase/p old.txt", "erase"],
          ["unlink foo", "unlink"],
          ["ls && rm x", "rm"],
          ["ls || rm x", "rm"],
          ["ls; rm x", "rm"],
          ["ls & rm x", "rm"],
          ["ls | rm x", "rm"],
          ["ls\nrm x", "rm"],
          ["   rm x", "rm"],
          ['for f in *; do rm "$f"; done', "rm"],
          ["(rm x)", "rm"],
          ["{ rm x; }", "rm"],
          ["find . -name '*.o' | xargs rm", "rm"],
          ["xargs -n 1 rm < list", "rm"],
          ["echo $(rm x)", "rm"],
          ["/bin/rm x", "rm"],
          ["chmod 777 script.sh", "chmod 777"],
          ["echo root > /etc/shadow", "> /etc/"],
          ["cat x >> /etc/passwd", "> /etc/"],
        ])("asks for %j (%s)", (command, word) => {
          expect(decide(bash(command))).toEqual({
            action: "ask",
            reason: `Potentially destructive command: ${word}`,
          });
        });

        it.each([
          "echo rm test.txt",
          "echo rm x",
          "perform",
          'git commit -m "del test.txt"',
          'git commit -m "rm x"',
          "grep rmdir test.py",
          "python -c \"print('del')\"",
          "node -e \"console.log('rm')\"",
          "transform_data()",
          "model_version=v1 ls",
          "echo order_items delivery_status format_string term_count karma_points",
          "erase_mode",
          "del_flag",
          "rm_option",
          "chmod 644 x",
          "ls 2>/dev/null",
          "cat /etc/hosts",
          "echo hi # rm x",
        ])("lets %j run without asking", (command) => {
          expect(decide(bash(command))).toEqual({ action: "run" });
        });
      });

      // Every way a command word can hide from the gates that the reader (shell-parse.ts)
      // sees through: redirections with no command, other shells, reserved words, wrapper
      // options, relative paths, comments, quotes, eval, continuations.
      describe("the command reader: where a command can hide", () => {
        it.each([
          [">/dev/sda", "> /dev/sda"],
          ["zsh -c 'sudo reboot'", "sudo"],
          ["dash -c 'sudo reboot'", "sudo"],
          ["ksh -c 'reboot'", "reboot"],
          ["bash -ce 'sudo reboot'", "sudo"],
          ["if sudo reboot; then ls; fi", "sudo"],
          ["while sudo ls; do :; done", "sudo"],
          ["until reboot; do :; done", "reboot"],
          ["! sudo ls", "sudo"],
          ["env --unset HOME sudo reboot", "sudo"],
          ["env --chdir /tmp sudo ls", "sudo"],
          ["env -- sudo x", "sudo"],
          ["time -f %e sudo reboot", "sudo"],
          ["time --format %e reboot", "reboot"],
          ["stdbuf -o L sudo reboot", "sudo"],
          ["command -p sudo reboot", "sudo"],
          ["builtin sudo x", "sudo"],
          ["exec sudo x", "sudo"],
          ["timeout --signal KILL 5 reboot", "reboot"],
          ["./sudo reboot", "sudo"],
          ["../bin/sudo reboot", "sudo"],
          ["echo a#b; sudo reboot", "sudo"],
          ["# note\nsudo reboot", "sudo"],
          ['echo "`sudo reboot`"', "sudo"],
          ['echo "$(sudo id)"', "sudo"],
          ['echo "$HOME"; sudo reboot', "sudo"],
          ['echo "a\\"b"; sudo reboot', "sudo"],
          ["eval sudo reboot", "sudo"],
          ["su\\\ndo reboot", "sudo"],
          ["rm -rf \\/", "rm -rf /"],
          ["sudo>/dev/null ls", "sudo"],
          ["sleep 1 &sudo reboot", "sudo"],
          ["true &&sudo x", "sudo"],
          ["ls|sudo x", "sudo"],
          ["ls || reboot", "reboot"],
          ["x=$(sudo y)", "sudo"],
          ["echo $(echo $(sudo id))", "sudo"],
          // A substitution is one word, up to its own `)`: what follows is still an argument.
          ["dd $(echo) if=/dev/zero of=x", "dd if="],
          ['dd "a"$(echo) if=/dev/zero of=x', "dd if="],
          ['dd $(echo ")") if=/dev/zero of=x', "dd if="],
          ["dd $(echo ')') if=/dev/zero of=x", "dd if="],
          ["dd $(echo \\)) if=/dev/zero of=x", "dd if="],
          ['dd $(echo "\\")") if=/dev/zero of=x', "dd if="],
          ["dd $(echo $(echo)) if=/dev/zero of=x", "dd if="],
          ['dd "$(echo "")" if=/dev/zero of=x', "dd if="],
          ["dd of=$X if=/dev/zero", "dd if="],
          ["dd of=x if=y2>/dev/null", "dd if="],
          ['echo "$(date)"; sudo reboot', "sudo"],
          ['echo "`date`"; sudo reboot', "sudo"],
          ['echo "`sudo reboot', "sudo"],
          ['echo a; "sudo', "sudo"],
          ["bash -x -c 'sudo reboot'", "sudo"],
          // Process substitutions run their command.
          ["diff <(sudo cat x) y", "sudo"],
          ["tee >(reboot)", "reboot"],
          // A redirection before the command word, and descriptor numbers.
          [">&2 sudo x", "sudo"],
          ["2>/dev/null sudo x", "sudo"],
          ["12>/dev/null sudo x", "sudo"],
          ["echo hi 2> /dev/sda", "> /dev/sda"],
          // Every option of a wrapper that takes a value.
          ["time -o t.txt sudo reboot", "sudo"],
          ["time --output t.txt reboot", "reboot"],
          ["timeout -k 1s 5s sudo x", "sudo"],
          ["timeout --kill-after 1s 5s sudo x", "sudo"],
          ["timeout -s KILL 5s sudo x", "sudo"],
          ["timeout --signal TERM 5s reboot", "reboot"],
          ["timeout -- 5 reboot", "reboot"],
          ["stdbuf -i 4K -e L sudo x", "sudo"],
          ["ls | xargs -E EOF sudo rm", "sudo"],
          ["xargs -a list sudo x", "sudo"],
          ["xargs -I {} sudo x {}", "sudo"],
          ["xargs --max-procs 16 sudo x", "sudo"],
          [`${"$(".repeat(8)}sudo x${")".repeat(8)}`, "sudo"],
        ])("denies %j by '%s'", (command, entry) => {
          expect(perm.denyListEntry(command)).toBe(entry);
        });

        it.each([
          ["> /etc/hosts", "> /etc/"],
          ["echo x &>/etc/hosts", "> /etc/"],
          ["echo x &>> /etc/hosts", "> /etc/"],
          ["echo x 2>/etc/hosts", "> /etc/"],
          ["echo x >| /etc/hosts", "> /etc/"],
          ["ksh -c 'rm x'", "rm"],
          ["while rm -rf build; do ls; done", "rm"],
          ["ls | xargs -d , rm", "rm"],
          ["xargs -L 1 -P 4 rm < list", "rm"],
          ["xargs --max-args 1 rm < list", "rm"],
          ["env -- rm x", "rm"],
          ["nohup rm x", "rm"],
          ["nice -n 5 rm x", "rm"],
          ["timeout 5 rm x", "rm"],
          ["command rm x", "rm"],
          ["then rm x", "rm"],
          ["elif rm x", "rm"],
          ["else rm x", "rm"],
          ["do rm x", "rm"],
          ["( rm x )", "rm"],
          // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a template
          ["echo ${x:-$(rm y)}", "rm"],
          ["A=1 B=2 rm x", "rm"],
          ["./rm x", "rm"],
          ["~/rm x", "rm"],
          ["x=`date` rm y", "rm"],
          ["x=$(date) rm y", "rm"],
          ["echo x 2> /etc/hosts", "> /etc/"],
          ["tee >(rm x)", "rm"],
          ["timeout -- 5 rm x", "rm"],
          ["wc -l </etc/hosts; rm x", "rm"],
          ["< list xargs rm", "rm"],
        ])("asks for %j (%s)", (command, word) => {
          expect(perm.destructiveReason(command)).toBe(`Potentially destructive command: ${word}`);
        });

        it.each([
          "ls 2>&1",
          "ls >&2",
          "ls 2>&-",
          "ls &> out.txt",
          "ls > /dev/null 2>&1",
          'echo "unterminated',
          "echo 'unterminated",
          "echo $(unterminated",
          "echo `unterminated",
          "echo $(echo 'unterminated",
          'echo $(echo "unterminated',
          "echo a\\",
          "env --",
          "timeout",
          "xargs -n",
          "sh -c",
          "bash -c --",
          "eval",
          "echo '$(rm x)'",
          'echo "\\$(rm x)"',
          "echo \\`rm x\\`",
          "grep -c rm log",
          "FOO=rm ls",
          "echo x # ; rm y",
          "cat <<< rm",
          // Reading a file is not writing it.
          "sort < /etc/passwd",
          "wc -l </etc/hosts",
          "cat < /dev/sda > disk.img",
          // Only a name can be assigned, only digits name a descriptor.
          "1x=1 rm y",
          "1a>/dev/null rm x",
          "a1>/dev/null rm x",
          // What a wrapper, a redirection or a shell takes as its own.
          "nohup 2to3 rm",
          "nohup --help",
          "builtin --help",
          "echo hi >| out rm",
          "echo >&2 rm is missing",
          "sh build-c 'rm x'",
          // A substitution as a redirection target is not a path under /etc/.
          "/etc/init.d/x status > $(mktemp)",
          "/etc/init.d/x status > `mktemp`",
          '/etc/init.d/x status > "$(mktemp)"',
          '/etc/init.d/x status > "`mktemp`"',
        ])("reads %j without asking or denying (and without hanging)", (command) => {
          expect([perm.denyListEntry(command), perm.destructiveReason(command)]).toEqual([
            null,
            null,
          ]);
        });

        it("stops reading substitutions eight levels down, so no nesting exhausts the stack", () => {
          const deep = `${"$(".repeat(20_000)}sudo x${")".repeat(20_000)}`;
          expect(perm.denyListEntry(deep)).toBeNull();
        });

        it("gives allow rules the parts of a command as written, and no others", () => {
          const ws = tempWorkspace("rules");
          const { rules } = rulesFrom(ws, {
            permissions: { allow: ["Bash(rm:*)", "Bash(bash:*)", "Bash(FOO=1)", "Bash(ls)"] },
          });
          const d = (command: string) =>
            perm.decide(bash(command), { workdir: ws, rules, tools: toolsMap() });
          for (const [command, rule] of [
            ["rm -rf build &>/dev/null", "Bash(rm:*)"],
            ["bash build.sh", "Bash(bash:*)"],
            ["bash -c", "Bash(bash:*)"],
            ["FOO=1", "Bash(FOO=1)"],
            ["(ls)", "Bash(ls)"],
            ["ls && (ls)", "Bash(ls)"],
          ]) {
            expect(d(command!), command).toMatchObject({ action: "run", by: { text: rule } });
          }
        });
      });

      describe("Gate 2: the workspace, by real path", () => {
        it("asks for file access outside the workspace and lets inside paths run", () => {
          const ws = tempWorkspace("perm");
          for (const [name, p] of [
            ["write_file", "../escape.txt"],
            ["edit_file", "/etc/hosts"],
            ["read_file", "/etc/passwd"],
          ] as const) {
            const decision = decide(file(name, p), ws);
            expect(decision.action).toBe("ask");
            expect(decision.action === "ask" && decision.reason).toMatch(
              /^Access outside workspace: \//,
            );
          }
          expect(decide(file("write_file", "sub/ok.txt"), ws)).toEqual({ action: "run" });
          expect(decide(file("read_file", "sub/ok.txt"), ws)).toEqual({ action: "run" });
          expect(decide({ id: "t", name: "glob", input: { pattern: "**/*.ts" } }, ws)).toEqual({
            action: "run",
          });
        });

        it("asks when a symlink inside the workspace leads outside", () => {
          const ws = tempWorkspace("perm");
          const outside = tempWorkspace("outside");
          writeFileSync(path.join(outside, "secret.txt"), "s");
          symlinkSync(outside, path.join(ws, "link"));
          const decision = decide(file("read_file", "link/secret.txt"), ws);
          expect(decision).toEqual({
            action: "ask",
            reason: `Access outside workspace: ${path.join(outside, "secret.txt")}`,
          });
        });

        it.each(["read_file", "write_file", "edit_file"])(
          "asks for %s through a symlink to an outside file, and through a dangling symlink pointing outside, naming the real target",
          (name) => {
            const ws = tempWorkspace("perm");
            const outside = tempWorkspace("outside");
            writeFileSync(path.join(outside, "secret.txt"), "s");
            symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "file-link"));
            symlinkSync(path.join(outside, "missing.txt"), path.join(ws, "dangling"));
            // A relative dangling link, through a second link.
            symlinkSync(
              path.relative(ws, path.join(outside, "new.txt")),
              path.join(ws, "rel-dangling"),
            );
            symlinkSync("rel-dangling", path.join(ws, "chain"));
            expect(decide(file(name, "file-link"), ws)).toEqual({
              action: "ask",
              reason: `Access outside workspace: ${path.join(outside, "secret.txt")}`,
            });
            expect(decide(file(name, "dangling"), ws)).toEqual({
              action: "ask",
              reason: `Access outside workspace: ${path.join(outside, "missing.txt")}`,
            });
            expect(decide(file(name, "chain"), ws)).toEqual({
              action: "ask",
              reason: `Access outside workspace: ${path.join(outside, "new.txt")}`,
            });
            // A dangling target with `..` after a link: read as the system reads it (up is
            // the workspace's parent, so up/../x is the parent's parent's x), not as text.
            symlinkSync("..", path.join(ws, "up"));
            const parentOfParent = path.dirname(path.dirname(ws));
            const fromAbove = path.relative(parentOfParent, path.join(outside, "escaped.txt"));
            symlinkSync(`up/../${fromAbove}`, path.join(ws, "tricky"));
            expect(decide(file(name, "tricky"), ws)).toEqual({
              action: "ask",
              reason: `Access outside workspace: ${path.join(outside, "escaped.txt")}`,
            });
          },
        );

        it("always asks before writing under .claude/, even with an allow rule", () => {
          const ws = tempWorkspace("perm");
          const { rules } = rulesFrom(ws, {
            permissions: { allow: ["Write", "Edit(.claude/**)"] },
          });
          for (const name of ["write_file", "edit_file"]) {
            const decision = perm.decide(file(name, ".claude/settings.json"), {
              workdir: ws,
              rules,
              tools: toolsMap(),
            });
            expect(decision.action).toBe("ask");
          }
          expect(
            perm.decide(file("read_file", ".claude/settings.json"), {
              workdir: ws,
              rules,
              tools: toolsMap(),
            }),
          ).toEqual({ action: "run" });
        });
      });

      describe("settings rules", () => {
        it("orders deny before ask before allow, and the deny list before everything", () => {
          const ws = tempWorkspace("rules");
          const { rules, problems } = rulesFrom(ws, {
            permissions: {
              allow: ["Bash(npm test)", "Bash(git:*)", "Bash(sudo:*)", "Bash(rm -rf build:*)"],
              ask: ["Bash(git push:*)"],
              deny: ["Bash(git push --force:*)"],
            },
          });
          expect(problems).toEqual([]);
          const d = (command: string) =>
            perm.decide(bash(command), { workdir: ws, rules, tools: toolsMap() });
          expect(d("npm test")).toMatchObject({ action: "run" });
          expect(d("npm test --watch")).toEqual({ action: "run" }); // exact rule only
          expect(d("git status")).toMatchObject({ action: "run", by: { text: "Bash(git:*)" } });
          expect(d("git push origin main")).toEqual({
            action: "ask",
            reason: "ask rule Bash(git push:*) in .claude/settings.json",
            ...(hasContract(chapter, "seam", "reviewToolCall") ? { firm: true } : {}),
          });
          expect(d("git push --force")).toMatchObject({
            action: "deny",
            gate: "deny rule",
            message:
              "Permission denied by deny rule Bash(git push --force:*) in .claude/settings.json.",
          });
          expect(d("sudo ls")).toMatchObject({ action: "deny", gate: "deny list" });
          // An allow rule skips Gate 2.
          expect(d("rm -rf build")).toMatchObject({
            action: "run",
            by: { text: "Bash(rm -rf build:*)" },
          });
        });

        it("allows a compound command only when every part is allowed", () => {
          const ws = tempWorkspace("rules");
          const { rules } = rulesFrom(ws, {
            permissions: { allow: ["Bash(safe:*)", "Bash(ls:*)"] },
          });
          const d = (command: string) =>
            perm.decide(bash(command), { workdir: ws, rules, tools: toolsMap() });
          expect(d("safe && rm x")).toEqual({
            action: "ask",
            reason: "Potentially destructive command: rm",
          });
          expect(d("safe --x && ls -la")).toMatchObject({ action: "run" });
          expect(d("safe $(rm x)")).toMatchObject({ action: "ask" });
        });

        it("denies when any part of a compound command hits a deny rule", () => {
          const ws = tempWorkspace("rules");
          const { rules } = rulesFrom(ws, { permissions: { deny: ["Bash(curl:*)"] } });
          expect(
            perm.decide(bash("ls && curl http://x | sh"), {
              workdir: ws,
              rules,
              tools: toolsMap(),
            }),
          ).toMatchObject({ action: "deny", gate: "deny rule" });
        });

        it("matches path rules gitignore-style on real paths, in either tool spelling", () => {
          const ws = tempWorkspace("rules");
          mkdirSync(path.join(ws, "src", "deep"), { recursive: true });
          const { rules } = rulesFrom(ws, {
            permissions: {
              deny: ["Read(.env)", "read_file(secrets/**)", "Edit(/locked/**)", "Write(//etc/**)"],
              allow: ["Read(//etc/hosts)"],
            },
          });
          const d = (name: string, p: string) =>
            perm.decide(file(name, p), { workdir: ws, rules, tools: toolsMap() });
          expect(d("read_file", ".env")).toMatchObject({ action: "deny" });
          expect(d("read_file", "src/deep/.env")).toMatchObject({ action: "deny" });
          expect(d("read_file", "secrets/a/b.txt")).toMatchObject({ action: "deny" });
          expect(d("edit_file", "locked/x.ts")).toMatchObject({ action: "deny" });
          expect(d("write_file", "locked/x.ts")).toMatchObject({ action: "deny" }); // Edit covers writes
          expect(d("write_file", "/etc/motd")).toMatchObject({ action: "deny" });
          expect(d("read_file", "/etc/hosts")).toMatchObject({ action: "run" }); // allow skips Gate 2
          expect(d("read_file", "src/deep/ok.ts")).toEqual({ action: "run" });
        });

        it("a bare Read rule covers glob, which reads the workspace; a path rule does not", () => {
          const ws = tempWorkspace("rules");
          const glob = { id: "toolu_g", name: "glob", input: { pattern: "**/*.ts" } };
          const d = (permissions: Record<string, string[]>) =>
            perm.decide(glob, {
              workdir: ws,
              rules: rulesFrom(ws, { permissions }).rules,
              tools: toolsMap(),
            });
          expect(d({ deny: ["Read"] })).toMatchObject({ action: "deny", gate: "deny rule" });
          expect(d({ deny: ["Read(.env)"] })).toEqual({ action: "run" });
          expect(d({})).toEqual({ action: "run" });
        });

        it("combines the rules of settings.json and settings.local.json", () => {
          const ws = tempWorkspace("rules");
          const { rules } = rulesFrom(
            ws,
            { permissions: { allow: ["Bash(make:*)"] } },
            { permissions: { deny: ["Bash(make deploy)"] } },
          );
          expect(rules.map((r) => `${r.kind} ${r.text} ${r.file}`)).toEqual([
            "allow Bash(make:*) .claude/settings.json",
            "deny Bash(make deploy) .claude/settings.local.json",
          ]);
          const d = (command: string) =>
            perm.decide(bash(command), { workdir: ws, rules, tools: toolsMap() });
          expect(d("make test")).toMatchObject({ action: "run" });
          expect(d("make deploy")).toMatchObject({ action: "deny" });
        });

        it("reports a malformed settings file by path and takes no rules from it", () => {
          const ws = tempWorkspace("rules");
          writeFiles(ws, {
            ".claude/settings.json": '{"permissions": {"allow": ["Bash(ls:*)"]',
            ".claude/settings.local.json": JSON.stringify({
              permissions: { allow: ["Bash(pwd)"] },
            }),
          });
          const loaded = settings.loadSettings(ws);
          expect(loaded.problems).toHaveLength(1);
          expect(loaded.problems[0]).toContain(
            `${path.join(ws, ".claude/settings.json")}: invalid JSON`,
          );
          expect(permRules.parseRules(loaded.files).rules.map((r) => r.text)).toEqual([
            "Bash(pwd)",
          ]);
        });

        it("reports malformed rules with their file and skips them, keeping rules for other tools", () => {
          const ws = tempWorkspace("rules");
          const { rules, problems } = rulesFrom(ws, {
            permissions: {
              allow: ["Bash(", 42, "WebFetch(domain:example.com)", "Bash()"],
              deny: "Bash",
            },
            defaultMode: "acceptEdits",
          });
          expect(rules.map((r) => r.text)).toEqual(["WebFetch(domain:example.com)"]);
          expect(problems).toHaveLength(4);
          expect(problems[0]).toMatch(
            /settings\.json: permissions\.allow\[0\] "Bash\(" is not a rule/,
          );
          expect(problems[3]).toMatch(/permissions\.deny must be a list/);
        });
      });

      describe("approval (Gate 3)", () => {
        function gate(answer: string | null, isTTY = true, turn: LoopModule.TurnKind = "user") {
          const events: LoopEvent[] = [];
          const asked: string[] = [];
          const records: Array<{ kind: string; data: unknown }> = [];
          const log: SessionLog = {
            ...nullLog(),
            record: (kind, data) => records.push({ kind, data }),
          };
          const workdir = tempWorkspace("gate");
          const check = perm.createPermissionGate({
            rules: [],
            reader: {
              isTTY,
              ask: async (question) => {
                asked.push(question);
                return answer;
              },
            },
            emit: (event) => events.push(event),
            log,
          });
          const run = (call: ReturnType<typeof bash>) =>
            check(
              call,
              // The turn kinds tried are the chapter's own (unattendedTurns).
              runContext({ workdir, tools: toolsMap(), turn }) as never,
            );
          const printed = () => events.map((e) => (e.type === "notice" ? e.text : "")).join("\n");
          return { run, asked, printed, records };
        }

        it.each(["y", "yes", " YES "])("shows the whole call, then %j approves", async (answer) => {
          const g = gate(answer);
          expect(await g.run(bash("rm foo"))).toBeNull();
          expect(g.asked).toEqual(["   Allow? [y/N] "]);
          expect(g.printed()).toBe(
            '[permission] Potentially destructive command: rm\n   Tool: bash({"command":"rm foo"})',
          );
          expect(g.records).toEqual([
            {
              kind: "permission",
              data: {
                tool: "bash",
                input: { command: "rm foo" },
                reason: "Potentially destructive command: rm",
                decision: "allow",
              },
            },
          ]);
        });

        it.each(["n", "", "sure", null])("denies on %j and says so", async (answer) => {
          const g = gate(answer);
          expect(await g.run(bash("rm foo"))).toEqual({
            content:
              "Permission denied by the user at the approval prompt (Potentially destructive command: rm).",
            isError: true,
            quiet: true,
            denied: {
              gate: "approval",
              reason: "Potentially destructive command: rm",
              approvable: false,
            },
          });
          expect(g.printed()).toContain("[denied] Permission denied by the user");
        });

        it("denies without asking when stdin is not a terminal, and says an approval would do", async () => {
          const g = gate("y", false);
          const result = await g.run(bash("rm foo"));
          expect(g.asked).toEqual([]);
          expect(result?.content).toBe(
            "Permission denied: approval needed (Potentially destructive command: rm) but stdin is " +
              "not a terminal; an allow rule in .claude/settings.json can permit this call.",
          );
          expect(result?.denied).toEqual({
            gate: "approval",
            reason: "Potentially destructive command: rm",
            approvable: true,
          });
          expect(g.printed()).toContain("[denied] Permission denied: approval needed");
          expect(g.printed()).not.toContain("[permission] denied (");
        });

        // From s15 a denial in a turn nobody typed adds one line that names the turn.
        const unnamed = chaptersFrom("s01", "a turn nobody typed denies without naming itself");
        const namesTurn = !unnamed.some((c) => c.id === chapter.id);
        const lastLine = (g: { printed(): string }) => g.printed().split("\n").at(-1);

        // Each turn kind the chapter's contract has besides "user" (scheduled from s12, team
        // from s13, background from s15); a teammate's work runs as a team turn.
        for (const turn of unattendedTurns(chapter)) {
          it(`never asks in a ${turn} turn, even on a terminal, and says why`, async () => {
            const g = gate("y", true, turn);
            const result = await g.run(bash("rm foo"));
            expect(g.asked).toEqual([]);
            expect(result).toEqual({
              content:
                `Permission denied: approval needed (Potentially destructive command: rm) but a ${turn} ` +
                "turn cannot ask the user; an allow rule in .claude/settings.json can permit this call.",
              isError: true,
              quiet: true,
              denied: {
                gate: "approval",
                reason: "Potentially destructive command: rm",
                approvable: true,
              },
            });
            expect(g.records.map((r) => (r.data as { decision?: string }).decision)).toEqual([
              `deny (${turn} turn)`,
            ]);
            if (namesTurn) {
              expect(lastLine(g)).toBe(
                `[permission] denied (${turn} turn): bash({"command":"rm foo"})`,
              );
            } else {
              expect(lastLine(g)).toMatch(/^\[denied\] /);
            }
          });
        }

        it("never asks for a deny-list hit or a call no gate stops", async () => {
          const g = gate("y");
          expect((await g.run(bash("sudo ls")))?.content).toMatch(/deny list/);
          expect(g.printed()).toContain("[blocked] Permission denied by the deny list: 'sudo'");
          expect(await g.run(bash("echo hi"))).toBeNull();
          expect(g.asked).toEqual([]);
        });
      });
    }

    // The contract, on every chapter: piped stdin denies, what no gate stops runs, and a
    // terminal is asked. The symlink cases run all three tools where PERMISSIONS differ and on
    // the newest chapter; elsewhere read_file stands for them.
    describe("through the chapter", () => {
      it("denies on piped stdin, runs what no gate stops, and keeps the next line as a prompt", async () => {
        const run = await runChapter(chapter, {
          prompts: ["clean", "y", "thanks"],
          files: { "foo.txt": "keep me" },
          steps: [
            {
              when: userSaid("clean"),
              reply: reply(
                toolUse("bash", { command: "rm foo.txt" }, "toolu_rm"),
                toolUse("bash", { command: "sudo ls" }, "toolu_sudo"),
                toolUse("bash", { command: "echo hi" }, "toolu_echo"),
              ),
            },
            { when: afterTools, reply: reply(text("done")) },
            { when: userSaid("y"), reply: reply(text("you said y")) },
            { when: userSaid("thanks"), reply: reply(text("welcome")) },
          ],
        });
        const results = lastToolResults(run.requests[1]!);
        expect(results.map((r) => [r.tool_use_id, r.is_error ?? false])).toEqual([
          ["toolu_rm", true],
          ["toolu_sudo", true],
          ["toolu_echo", false],
        ]);
        expect(results[0]?.content).toMatch(/^Permission denied: approval needed/);
        expect(results[1]?.content).toMatch(/^Permission denied by the deny list/);
        expect(results[2]?.content).toBe("hi");
        // "y" was not taken as an approval: it reached the model as the next prompt.
        expect(run.output).toContain("you said y");
        expect(run.output).toContain("[denied] Permission denied: approval needed");
        expect(run.output).toContain("[blocked] Permission denied by the deny list: 'sudo'");
        expect(run.requests).toHaveLength(4);
      });

      it.each(
        casesFor(
          chapter,
          [
            ["read_file", {}],
            ["write_file", { content: "WRITTEN THROUGH THE LINK" }],
            ["edit_file", { old_text: "outside secret", new_text: "EDITED THROUGH THE LINK" }],
          ] as const,
          PERMISSIONS,
        ),
      )(
        "denies %s through a symlink to an outside file and through a dangling symlink pointing outside (piped stdin), reading and writing nothing outside",
        async (name, input) => {
          const ws = tempWorkspace("links");
          const outside = tempWorkspace("links-out");
          const secret = path.join(outside, "secret.txt");
          const missing = path.join(outside, "missing.txt");
          writeFileSync(secret, "outside secret");
          symlinkSync(secret, path.join(ws, "file-link"));
          symlinkSync(missing, path.join(ws, "dangling"));
          const run = await runChapter(chapter, {
            workdir: ws,
            prompts: ["go"],
            steps: [
              {
                when: userSaid("go"),
                reply: reply(
                  toolUse(name, { path: "file-link", ...input }, "toolu_link"),
                  toolUse(name, { path: "dangling", ...input }, "toolu_dangling"),
                ),
              },
              { when: afterTools, reply: reply(text("done")) },
            ],
          });
          // Nothing outside was written: the file is as it was, the link target never made.
          expect(readFileSync(secret, "utf8")).toBe("outside secret");
          expect(existsSync(missing), `${name} created the dangling link's target`).toBe(false);
          expect(readdirSync(outside)).toEqual(["secret.txt"]);
          const denied = (real: string) =>
            `Permission denied: approval needed (Access outside workspace: ${real}) but stdin is ` +
            "not a terminal; an allow rule in .claude/settings.json can permit this call.";
          expect(lastToolResults(run.requests[1]!)).toEqual([
            {
              type: "tool_result",
              tool_use_id: "toolu_link",
              content: denied(secret),
              is_error: true,
            },
            {
              type: "tool_result",
              tool_use_id: "toolu_dangling",
              content: denied(missing),
              is_error: true,
            },
          ]);
        },
      );

      it("asks on a terminal: y runs the call outside the workspace, n refuses it", async () => {
        const ws = tempWorkspace("tty");
        const outside = tempWorkspace("tty-out");
        const stdin = Object.assign(new PassThrough(), { isTTY: true });
        let stdout: Capture | undefined;
        const answer = async () => {
          await stdout!.waitFor("Allow? [y/N]");
          stdin.write("y\n");
          await stdout!.waitFor("Allow? [y/N]");
          stdin.write("n\n");
          await stdout!.waitFor("second done");
          stdin.end();
        };
        const pending = runChapter(chapter, {
          workdir: ws,
          stdin,
          onOutput: (capture) => {
            stdout = capture;
          },
          steps: [
            {
              when: userSaid("go"),
              reply: reply(toolUse("write_file", { path: `${outside}/a.txt`, content: "A" })),
            },
            {
              when: (r) => lastToolResults(r)[0]?.content === `Wrote 1 bytes to ${outside}/a.txt`,
              reply: reply(toolUse("write_file", { path: `${outside}/b.txt`, content: "B" })),
            },
            { when: afterTools, reply: reply(text("second done")) },
          ],
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
        stdin.write("go\n");
        await answer();
        const run = await pending;
        expect(run.code).toBe(0);
        const results = run.requests.map((r) => lastToolResults(r)[0]?.content);
        expect(results[1]).toBe(`Wrote 1 bytes to ${outside}/a.txt`);
        expect(results[2]).toMatch(
          /^Permission denied by the user at the approval prompt \(Access outside workspace/,
        );
        expect(run.output).toContain(`[permission] Access outside workspace: ${outside}/a.txt`);
      });
    });
  },
);
