/**
 * The breakages `pnpm mutate` applies, one at a time, to a copy of the repository
 * (scripts/mutate.ts). Each removes one behaviour the course promises; a good suite fails
 * for every one of them.
 *
 * To add one: pick a code line (not a comment: comments get reworded), copy it exactly
 * into `search` (several lines joined with \n when one line is not unique; it must occur
 * exactly once in the file), write the broken version in `replace`, say in one line what
 * behaviour that removes, and list the test files (under tests/) that should catch it.
 * Then `pnpm mutate <id>`.
 */

export interface Mutation {
  /** Unique; by convention `<chapter>-<file>-<what breaks>`. */
  id: string;
  /** Repository-relative: `chapters/s09-memory/src/loop.ts` or `shared/src/fake-server.ts`. */
  file: string;
  /** Exact text, found exactly once in the file (otherwise the breakage is stale). */
  search: string;
  replace: string;
  /** One line: the behaviour this breakage removes. */
  description: string;
  /**
   * Test files relative to tests/ (`memory.test.ts`, `shared/fake-server.test.ts`); absent
   * runs the whole suite. For a chapter file only tests whose name holds the chapter id run.
   */
  tests?: string[];
}

const S09 = "chapters/s09-memory/src";
const S10 = "chapters/s10-tasks/src";
const S11 = "chapters/s11-background/src";
const S13 = "chapters/s13-teams/src";
const S14 = "chapters/s14-mcp/src";
const S15 = "chapters/s15-integrated/src";
const S16 = "chapters/s16-workflow/src";
const S17 = "chapters/s17-goal/src";

export const MUTATIONS: Mutation[] = [
  // ---------------------------------------------------------------- s09 contract.ts (the seams)
  {
    id: "s09-loop-afterresults-first-only",
    file: `${S09}/contract.ts`,
    search: "return extras.flatMap((seams) => seams.afterResults(round, run));",
    replace: "return extras.slice(0, 1).flatMap((seams) => seams.afterResults(round, run));",
    description: "afterResults keeps only the first mechanism's text blocks",
    tests: ["seams.test.ts", "todo.test.ts"],
  },
  {
    id: "s09-loop-onstop-asks-all",
    file: `${S09}/contract.ts`,
    search:
      "      for (const seams of stops) {\n" +
      "        const answer = await seams.onStop(messages, response, run);\n" +
      "        if (answer) return answer;\n" +
      "      }\n" +
      "      return null;",
    replace:
      "      let first: string | null = null;\n" +
      "      for (const seams of stops) {\n" +
      "        const answer = await seams.onStop(messages, response, run);\n" +
      "        if (answer) first ??= answer;\n" +
      "      }\n" +
      "      return first;",
    description: "onStop does not stop at the first answer: every later mechanism is asked too",
    tests: ["seams.test.ts", "hooks.test.ts"],
  },
  {
    id: "s09-loop-around-reversed",
    file: `${S09}/contract.ts`,
    search: "const chain = around.reduceRight<() => Promise<Message>>(",
    replace: "const chain = around.reduce<() => Promise<Message>>(",
    description: "aroundModelCall wrappers nest in reverse order (the last one outermost)",
    tests: ["seams.test.ts", "compact.test.ts"],
  },
  {
    id: "s09-loop-ends-on-stop-reason",
    file: `${S09}/loop.ts`,
    search: "if (calls.length === 0) {",
    replace: 'if (calls.length === 0 || response.stop_reason === "end_turn") {',
    description: "the turn ends on stop_reason end_turn although the reply asks for tools",
    tests: ["loop.test.ts"],
  },

  // ---------------------------------------------------------------- s09 repl.ts
  {
    id: "s09-loop-answer-after-stop",
    file: "chapters/s04-hooks/src/loop.ts",
    search:
      '      if (run.role === "main")\n' +
      '        config.emit({ type: "text", scope: config.scope, text: textOf(response) });\n' +
      "      const continuation = await seams.onStop(messages, response, run);",
    replace:
      "      const continuation = await seams.onStop(messages, response, run);\n" +
      '      if (run.role === "main")\n' +
      '        config.emit({ type: "text", scope: config.scope, text: textOf(response) });',
    description: "the answer is shown after the Stop hooks judged it, not as it arrived",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s09-repl-afterturn-before-answer",
    file: `${S09}/repl.ts`,
    search: "    result = await options.runTurn(turn);\n",
    replace:
      '    for (const hooks of options.hooks ?? []) await hooks.afterTurn?.(turn, { response: { content: [] }, turns: 0, stopped: "done" } as never);\n' +
      "    result = await options.runTurn(turn);\n",
    description: "afterTurn hooks run before the turn's answer is shown",
    tests: ["seams.test.ts", "memory.test.ts"],
  },
  {
    id: "s09-repl-ctrl-c-no-abort",
    file: `${S09}/repl.ts`,
    search: "    killAll();\n    controller.abort();",
    replace: "    killAll();",
    description: "Ctrl-C during a turn kills the command but does not abort the turn",
    tests: ["loop.test.ts", "subagent.test.ts"],
  },
  {
    id: "s09-repl-error-keeps-turn",
    file: `${S09}/repl.ts`,
    search: "      history.splice(0, history.length, ...before);\n",
    replace: "",
    description: "an API error leaves the failed turn's messages in the history",
    tests: ["loop.test.ts"],
  },

  // ---------------------------------------------------------------- s09 harness.ts, main.ts, prompt.ts
  {
    id: "s06-harness-seams-main-role",
    file: "chapters/s06-subagent/src/harness.ts",
    search: "seams: mechanisms.flatMap((mechanism) => mechanism.loop?.({ role, scope }) ?? []),",
    replace:
      'seams: mechanisms.flatMap((mechanism) => mechanism.loop?.({ role: "main", scope }) ?? []),',
    description: "every agent's loop seams are made for the main role (a child gets main's seams)",
    tests: ["subagent.test.ts", "memory.test.ts"],
  },
  {
    id: "s09-harness-auth-token-logged",
    file: `${S09}/harness.ts`,
    search: "secrets: [config.apiKey, config.authToken],",
    replace: "secrets: [config.apiKey],",
    description: "the session log does not redact ANTHROPIC_AUTH_TOKEN",
    tests: ["loop.test.ts"],
  },
  {
    id: "s09-main-hooks-before-permissions",
    file: `${S09}/main.ts`,
    search: "    permissionsMechanism(harness),\n    hooksMechanism(harness),\n",
    replace: "    hooksMechanism(harness),\n    permissionsMechanism(harness),\n",
    description: "PreToolUse hooks run before the permission gates (they see refused calls)",
    // s09 reruns no hooks suite (carried): the list rule says its order must be s08's.
    tests: ["course.test.ts"],
  },
  {
    id: "s09-prompt-dynamic-not-last",
    file: `${S09}/prompt.ts`,
    search: 'return [...stable, ...dynamic].map((section) => section.text).join("\\n\\n");',
    replace: 'return sections.map((section) => section.text).join("\\n\\n");',
    description: "dynamic prompt sections (memory) are not moved after the stable ones",
    tests: ["seams.test.ts", "memory.test.ts"],
  },

  // ---------------------------------------------------------------- s09 bash.ts, paths.ts, tools.ts
  {
    id: "s09-bash-timeout-ignored",
    file: `${S09}/bash.ts`,
    search: 'const timer = setTimeout(() => stop("timedOut"), options.timeoutMs);',
    replace: "const timer = setTimeout(() => {}, options.timeoutMs);",
    description: "the bash timeout never stops a command",
    tests: ["bash.test.ts"],
  },
  {
    id: "s09-bash-stream-uncapped",
    file: `${S09}/bash.ts`,
    search:
      "    if (kept >= STREAM_CAP_BYTES) return;\n" +
      "    const part = chunk.subarray(0, STREAM_CAP_BYTES - kept);",
    replace: "    const part = chunk;",
    description: "each stream is kept whole: no 1 MiB cap before decoding",
    tests: ["bash.test.ts"],
  },
  {
    id: "s09-paths-dangling-link",
    file: `${S09}/paths.ts`,
    search: "const link = linkTarget(here);",
    replace: "const link: string | null = null;",
    description: "a dangling symlink counts as itself, not as where it points",
    tests: ["permissions.test.ts", "tools.test.ts"],
  },
  {
    id: "s09-paths-prefix-sibling",
    file: `${S09}/paths.ts`,
    search: "const prefix = realParent.endsWith(path.sep) ? realParent : realParent + path.sep;",
    replace: "const prefix = realParent;",
    description: "a sibling with the same prefix (/work2 for /work) counts as inside",
    tests: ["tools.test.ts", "permissions.test.ts"],
  },
  {
    id: "s09-tools-glob-lists-outside",
    file: `${S09}/tools.ts`,
    search: "    .filter((file) => isInside(path.join(workdir, file), realRoot))\n",
    replace: "",
    description: "glob lists file links that point outside the workspace",
    tests: ["tools.test.ts"],
  },

  // ---------------------------------------------------------------- s09 permissions.ts, shell-parse.ts, settings.ts
  {
    id: "s09-permissions-deny-list-no-sudo",
    file: `${S09}/permissions.ts`,
    search: '  { entry: "sudo", hits: (word) => word === "sudo" },\n',
    replace: "",
    description: "the deny list loses its sudo entry",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-permissions-allow-any-part",
    file: `${S09}/permission-rules.ts`,
    search: 'if (rule.kind === "allow") return parts.length > 0 && parts.every(one);',
    replace: 'if (rule.kind === "allow") return parts.some(one);',
    description: "an allow rule matching one part allows a whole compound command",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-permissions-claude-write-allowed",
    file: `${S09}/permissions.ts`,
    search: '  if (settingsWrite) return { action: "ask", reason: settingsWrite };\n',
    replace: "",
    description: "writes under .claude/ no longer always ask (an allow rule lets them through)",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-permissions-approve-anything",
    file: `${S09}/permissions.ts`,
    search: 'const yes = answer !== null && ["y", "yes"].includes(answer.trim().toLowerCase());',
    replace: 'const yes = answer !== null && answer.trim().toLowerCase() !== "n";',
    description: "any answer but n approves at the prompt (not only y or yes)",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-shell-parse-no-substitution",
    file: `${S09}/shell-parse.ts`,
    search:
      "      nested.push(command.slice(i + 2, end));\n" +
      "      word += command.slice(i, end + 1);",
    replace: "      word += command.slice(i, end + 1);",
    description: "the inside of an unquoted $( ) is not read as a command",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-shell-parse-no-wrappers",
    file: `${S09}/shell-parse.ts`,
    search: "    else if (wrapper) i = pastWrapper(words, i + 1, wrapper);",
    replace: "    else if (wrapper) break;",
    description: "wrappers (env, nohup, xargs …) hide the command that follows them",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-settings-local-ignored",
    file: `${S09}/settings.ts`,
    search:
      'export const SETTINGS_FILES = [".claude/settings.json", ".claude/settings.local.json"];',
    replace: 'export const SETTINGS_FILES = [".claude/settings.json"];',
    description: ".claude/settings.local.json is never read",
    tests: ["permissions.test.ts", "hooks.test.ts"],
  },

  // ---------------------------------------------------------------- s17 hooks.ts, command-hooks.ts (the hooks suite runs on s17)
  {
    id: "s17-hooks-stop-cap-off-by-one",
    file: `${S17}/hooks.ts`,
    search: "if (++inCode > MAX_STOP_CONTINUATIONS) {",
    replace: "if (++inCode > MAX_STOP_CONTINUATIONS + 1) {",
    description: "an in-code Stop hook may force one continuation more than the cap",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s17-hooks-stop-command-capped",
    file: `${S17}/hooks.ts`,
    search: "        if (answer.command) return answer.text;\n",
    replace: "",
    description: "a command Stop hook is held to the in-code hooks' cap",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s17-hooks-stop-never-active",
    file: `${S17}/hooks.ts`,
    search: "const answer = await this.stop(messages, run, continuations > 0);",
    replace: "const answer = await this.stop(messages, run, false);",
    description: "Stop hooks are never told that a continuation is active",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s17-hooks-pretooluse-fails-open",
    file: `${S17}/hooks.ts`,
    search:
      '        this.report(run.scope, "PreToolUse", name, "error", text, "error");\n' +
      "        return { refuse: { content: text, isError: true } };",
    replace:
      '        this.report(run.scope, "PreToolUse", name, "error", text, "error");\n' +
      "        continue;",
    description: "a PreToolUse hook that throws lets the call through",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s17-command-hooks-exit-2-passes",
    file: `${S17}/command-hooks.ts`,
    search: "if (result.exitCode === 2)",
    replace: "if (result.exitCode === 3)",
    description: "a command hook's exit code 2 no longer blocks",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s17-command-hooks-no-prompt-context",
    file: `${S17}/command-hooks.ts`,
    search: '...(stdout && event === "UserPromptSubmit" ? { context: stdout } : {}),',
    replace: "...{},",
    description: "a UserPromptSubmit hook's plain stdout is not added to the prompt",
    tests: ["hooks.test.ts"],
  },

  // ---------------------------------------------------------------- s17 loop.ts, permissions.ts (hook verdicts)
  {
    id: "s17-permissions-allow-beats-ask-rule",
    file: `${S17}/permissions.ts`,
    search: 'if (verdict?.decision === "allow" && !decision.firm) {',
    replace: 'if (verdict?.decision === "allow") {',
    description: "a PreToolUse hook's allow skips an ask rule too",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s17-loop-halt-ignored",
    file: `${S17}/loop.ts`,
    search: "halt ??= output.halt;",
    replace: "",
    description: "a hook's continue: false no longer ends the run",
    tests: ["hooks.test.ts", "seams.test.ts"],
  },
  {
    id: "s17-loop-rewritten-input-unchecked",
    file: `${S17}/loop.ts`,
    search:
      "const again = review.call.input === parsed.value ? parsed : checkInput(tool, review.call.input);",
    replace: "const again = parsed;",
    description: "a hook's updatedInput is dropped (the model's input runs)",
    tests: ["hooks.test.ts"],
  },

  // ---------------------------------------------------------------- s17 mcp-http.ts
  {
    id: "s17-mcp-http-no-session-header",
    file: `${S17}/mcp-http.ts`,
    search: '...(this.session ? { "mcp-session-id": this.session } : {}),',
    replace: "",
    description: "requests after initialize no longer carry the server's session id",
    tests: ["mcp-http.test.ts"],
  },
  {
    id: "s17-mcp-http-no-resume",
    file: `${S17}/mcp-http.ts`,
    search: "if (lastId === undefined || attempt >= RESUME_ATTEMPTS) {",
    replace: "if (true) {",
    description: "a stream that drops before its answer is never resumed",
    tests: ["mcp-http.test.ts"],
  },
  {
    id: "s17-mcp-http-session-lost-fails",
    file: `${S17}/mcp-http.ts`,
    search: "if (await this.options.sessionLost()) return this.send(message, true);",
    replace: "",
    description: "a session the server forgot is not started again",
    tests: ["mcp-http.test.ts"],
  },

  {
    id: "s17-mcp-elicit-no-capability",
    file: `${S17}/mcp-client.ts`,
    search: "return this.options.elicit ? { elicitation: { form: {} } } : {};",
    replace: "return {};",
    description: "a client that can answer a server's questions no longer says so",
    tests: ["mcp-http.test.ts"],
  },
  {
    id: "s17-mcp-elicit-in-unattended-turn",
    file: `${S17}/mcp.ts`,
    search: 'if (!reader.isTTY || this.turnKind !== "user") {',
    replace: "if (!reader.isTTY) {",
    description: "a server's question is put to a terminal in a turn nobody typed",
    tests: ["mcp-http.test.ts"],
  },

  {
    id: "s17-mcp-auth-state-unchecked",
    file: `${S17}/mcp-auth.ts`,
    search: 'if (answer.get("state") !== state)',
    replace: "if (false)",
    description: "an authorization answer with another state is taken",
    tests: ["mcp-http.test.ts"],
  },
  {
    id: "s17-mcp-auth-no-step-up",
    file: `${S17}/mcp-http.ts`,
    search:
      '(response.status === 403 && bearerChallenge(challenge).error === "insufficient_scope");',
    replace: "false;",
    description: "a 403 insufficient_scope no longer signs in again for the scope it names",
    tests: ["mcp-http.test.ts"],
  },
  {
    id: "s17-mcp-auth-token-world-readable",
    file: `${S17}/mcp-auth.ts`,
    search: "chmodSync(this.options.tokenFile, 0o600);",
    replace: "chmodSync(this.options.tokenFile, 0o644);",
    description: "a kept token can be read by other users",
    tests: ["mcp-http.test.ts"],
  },

  // ---------------------------------------------------------------- s17 commands.ts
  {
    id: "s17-commands-allowed-tools-every-turn",
    file: `${S17}/commands.ts`,
    search: "active = pending && turn.request === pending.request ? pending : null;",
    replace: "active = pending ?? active;",
    description: "a command's allowed-tools keep allowing calls in the turns after its own",
    tests: ["commands.test.ts"],
  },
  {
    id: "s17-commands-refused-bang-sent",
    file: `${S17}/commands.ts`,
    search: "if (!result.ok) {",
    replace: "if (!result.ok && result.ran) {",
    description: "a command whose ! line a gate refuses is sent anyway",
    tests: ["commands.test.ts"],
  },
  {
    id: "s17-commands-arguments-dropped",
    file: `${S17}/commands.ts`,
    search: "return used || !all ? text",
    replace: "return true ? text",
    description: "arguments of a command that names none are dropped",
    tests: ["commands.test.ts"],
  },
  {
    id: "s17-commands-fenced-bang-ignored",
    file: `${S17}/commands.ts`,
    search: "const BANG = /^```!\\n([\\s\\S]*?)\\n```$|!`([^`\\n]+)`/gm;",
    replace: "const BANG = /!`([^`\\n]+)`()/gm;",
    description: "a block fenced by ```! is sent as text instead of run",
    tests: ["commands.test.ts"],
  },

  {
    id: "s17-command-hooks-condition-ignored",
    file: `${S17}/command-hooks.ts`,
    search: "const unsupported = UNSUPPORTED_FIELDS.filter((field) => spec[field] !== undefined);",
    replace: "const unsupported: string[] = [];",
    description:
      "a hook with an `if` condition runs on every matching call instead of being skipped",
    tests: ["hooks.test.ts"],
  },

  // ---------------------------------------------------------------- s17 plugins.ts and the loaders' plugin parts
  {
    id: "s17-plugins-path-leaves-plugin",
    file: `${S17}/plugins.ts`,
    search: "if (full !== root && !full.startsWith(",
    replace: "if (false && !full.startsWith(",
    description: "a manifest path may lead outside the plugin's folder",
    tests: ["plugins.test.ts"],
  },
  {
    id: "s17-plugins-enabled-without-asking",
    file: `${S17}/plugins.ts`,
    search: "    if (trusted[key] === digest) {",
    replace: "    if (true) {",
    description: "a plugin the project enables loads without the trust question",
    tests: ["plugins.test.ts"],
  },
  {
    id: "s17-plugins-hook-without-root",
    file: `${S17}/hooks.ts`,
    search: "          env: { CLAUDE_PLUGIN_ROOT: plugin.root },\n",
    replace: "",
    description: "a plugin's hook runs without CLAUDE_PLUGIN_ROOT in its environment",
    tests: ["plugins.test.ts"],
  },
  {
    id: "s17-repl-plain-name-lost",
    file: `${S17}/repl.ts`,
    search: "(plain.length === 1 ? commands.get(plain[0]!) : undefined)",
    replace: "undefined",
    description: "/name no longer finds a plugin's /kit:name",
    tests: ["plugins.test.ts"],
  },
  {
    id: "s17-subagent-plain-agent-lost",
    file: `${S17}/subagent.ts`,
    search: "byName.get(type) ?? (plain.length === 1 ? plain[0] : undefined)",
    replace: "byName.get(type)",
    description: "subagent_type no longer finds a plugin's kit:name by its plain name",
    tests: ["plugins.test.ts"],
  },

  // ---------------------------------------------------------------- s09 todo.ts; s17 agents.ts, subagent.ts
  {
    id: "s09-todo-reminder-after-2",
    file: `${S09}/todo.ts`,
    search: "if (silentRounds < REMIND_AFTER_ROUNDS) return [];",
    replace: "if (silentRounds < REMIND_AFTER_ROUNDS - 1) return [];",
    description: "the todo reminder comes after 2 silent rounds instead of 3",
    tests: ["todo.test.ts"],
  },
  {
    id: "s09-todo-two-in-progress",
    file: `${S09}/todo.ts`,
    search: 'if (items.filter((item) => item.status === "in_progress").length > 1) {',
    replace: 'if (items.filter((item) => item.status === "in_progress").length > 2) {',
    description: "two todos may be in_progress at once",
    tests: ["todo.test.ts"],
  },
  {
    id: "s17-subagent-child-gets-task",
    file: `${S17}/subagent.ts`,
    search: 'tools: (role) => (role === "main" ? [tool] : []),',
    replace: 'tools: (role) => (role !== "teammate" ? [tool] : []),',
    description: "a subagent gets the task tool (delegation more than one level deep)",
    tests: ["subagent.test.ts"],
  },
  {
    id: "s17-subagent-signal-dropped",
    file: `${S17}/subagent.ts`,
    search: "      maxTurns: MAX_SUB_TURNS,\n      signal,\n",
    replace: "      maxTurns: MAX_SUB_TURNS,\n",
    description: "the child loop does not get the turn's abort signal",
    tests: ["subagent.test.ts"],
  },

  {
    id: "s17-agents-user-wins",
    file: `${S17}/agents.ts`,
    search: "if (home) roots.push(",
    replace: "if (home) roots.unshift(",
    description: "a user's ~/.claude/agents definition wins over the project's of the same name",
    tests: ["subagent.test.ts"],
  },
  {
    id: "s17-agents-no-claude-code-names",
    file: `${S17}/agents.ts`,
    search: "tool.name === name || tool.claudeCode?.name === name;",
    replace: "tool.name === name;",
    description: "an agent's tools line no longer maps Claude Code's names (Read) to the course's",
    tests: ["subagent.test.ts"],
  },
  {
    id: "s17-subagent-unknown-tool-every-run",
    file: `${S17}/subagent.ts`,
    search: "for (const text of notes.filter((text) => !reported.has(text))) {",
    replace: "for (const text of notes) {",
    description: "an agent's unknown tool names are reported on every run, not once",
    tests: ["subagent.test.ts"],
  },
  {
    id: "s17-subagent-definition-prompt-dropped",
    file: `${S17}/subagent.ts`,
    search: "return { ...setup, tools, system, model };",
    replace: "return { ...setup, tools, model };",
    description: "a defined agent's instructions never reach its child's system prompt",
    tests: ["subagent.test.ts"],
  },

  // ---------------------------------------------------------------- s09 skills.ts, frontmatter.ts
  {
    id: "s09-skills-outside-root-read",
    file: `${S09}/skills.ts`,
    search: "if (!real.startsWith(realRoot + path.sep)) {",
    replace: "if (false) {",
    description: "a SKILL.md that resolves outside its root is loaded",
    tests: ["skills.test.ts"],
  },
  {
    id: "s09-skills-for-every-role",
    file: `${S09}/skills.ts`,
    search: 'const hasSkills = (role: Role) => role !== "subagent";',
    replace: "const hasSkills = (_role: Role) => true;",
    description: "a subagent gets the skills catalog and load_skill",
    tests: ["skills.test.ts", "subagent.test.ts"],
  },
  {
    id: "s09-frontmatter-last-delimiter",
    file: `${S09}/frontmatter.ts`,
    search:
      "const close = lines.findIndex((line, index) => index > 0 && withoutCR(line) === DELIMITER);",
    replace:
      "const close = lines.findLastIndex((line, index) => index > 0 && withoutCR(line) === DELIMITER);",
    description: "frontmatter closes at the last --- line, not the first",
    tests: ["skills.test.ts", "memory.test.ts"],
  },
  {
    id: "s09-frontmatter-crlf",
    file: `${S09}/frontmatter.ts`,
    search: 'return line.endsWith("\\r") ? line.slice(0, -1) : line;',
    replace: "return line;",
    description: "a CRLF file's frontmatter is not read like an LF one",
    tests: ["skills.test.ts"],
  },

  // ---------------------------------------------------------------- s09 compact-layers.ts, compact.ts
  {
    id: "s09-compact-snip-orphan-result",
    file: `${S09}/compact-layers.ts`,
    search:
      "  if (tailStart > 0 && hasToolResult(messages[tailStart]) && hasToolUse(messages[tailStart - 1]))\n" +
      "    tailStart--;\n",
    replace: "",
    description: "L1 snip may keep a tool_result whose tool_use it archived",
    tests: ["compact.test.ts"],
  },
  {
    id: "s09-compact-micro-newest-results",
    file: `${S09}/compact-layers.ts`,
    search:
      'if (m >= lastAssistant || message.role !== "user" || typeof message.content === "string")',
    replace: 'if (message.role !== "user" || typeof message.content === "string")',
    description: "L2 micro also compacts the newest results, which the model has not seen",
    tests: ["compact.test.ts"],
  },
  {
    id: "s09-compact-budget-smallest-first",
    file: `${S09}/compact-layers.ts`,
    search:
      ".sort((a, b) => resultLength(b.block as ToolResult) - resultLength(a.block as ToolResult));",
    replace:
      ".sort((a, b) => resultLength(a.block as ToolResult) - resultLength(b.block as ToolResult));",
    description: "L3 budget persists the smallest results first instead of the largest",
    tests: ["compact.test.ts"],
  },
  {
    id: "s09-compact-any-error-compacts",
    file: `${S09}/compact.ts`,
    search: "          if (!isTooLong(error)) throw error;\n",
    replace: "",
    description: "any API error, not only prompt too long, triggers a reactive compaction",
    tests: ["compact.test.ts"],
  },
  {
    id: "s09-compact-micro-before-budget",
    file: `${S09}/compact.ts`,
    search:
      "    replaceAll(messages, this.budget(messages, run.scope));\n" +
      "    replaceAll(messages, this.snip(messages, run.scope));\n" +
      "    replaceAll(messages, this.micro(messages, run.scope));",
    replace:
      "    replaceAll(messages, this.micro(messages, run.scope));\n" +
      "    replaceAll(messages, this.snip(messages, run.scope));\n" +
      "    replaceAll(messages, this.budget(messages, run.scope));",
    description: "the layers run L2 before L3 (a persisted result's placeholder loses its path)",
    tests: ["compact.test.ts"],
  },

  // ---------------------------------------------------------------- s09 memory*.ts, instructions.ts
  {
    id: "s09-memory-recall-uncapped",
    file: `${S09}/memory.ts`,
    search: "      if (chosen.length === MAX_RECALLED) break;\n",
    replace: "",
    description: "recall takes every record the selection call names, not at most 5",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-memory-temporary-wording-kept",
    file: `${S09}/memory-extract.ts`,
    search: "const marker = TEMPORARY_MARKERS.find((m) => text.includes(m));",
    replace: "const marker = TEMPORARY_MARKERS.find(() => false);",
    description: "the temporary-wording filter is off: 'for now' facts are stored",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-memory-corrupt-record-overwritten",
    file: `${S09}/memory-extract.ts`,
    search: "    if (clash)\n",
    replace: "    if (clash && false)\n",
    description: "consolidation may overwrite a record whose frontmatter is corrupt",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-memory-existing-name-overwritten",
    file: `${S09}/memory-extract.ts`,
    search: "const slug = memorySlug(record.name);",
    replace: 'const slug = memorySlug(record.name).concat(".absent");',
    description: "extraction overwrites an existing record with the same name",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-memory-dialogue-reads-injected",
    file: `${S09}/memory-extract.ts`,
    search: '  if (origin !== "input" && origin !== "model") return "";\n',
    replace: "",
    description:
      "extraction reads what the harness injected (tool results, continuations, summaries)",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-memory-store-path-escape",
    file: `${S09}/memory-store.ts`,
    search: "      filename !== path.basename(filename) ||\n",
    replace: "",
    description: "the store accepts a file name with a path in it",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-memory-store-index-stale",
    file: `${S09}/memory-store.ts`,
    search: "    this.rebuildIndex();\n    return filename;",
    replace: "    return filename;",
    description: "writing a record does not rebuild MEMORY.md",
    tests: ["memory.test.ts"],
  },
  {
    id: "s09-instructions-uncapped",
    file: `${S09}/instructions.ts`,
    search: "if (text.length > PROJECT_FILE_LIMIT) {",
    replace: "if (false) {",
    description: "CLAUDE.md and AGENTS.md reach the prompt whole, past 20 000 characters",
    tests: ["memory.test.ts"],
  },

  // ---------------------------------------------------------------- earlier chapters
  // ------------------------------------------------- fixes the property tests led to
  {
    id: "s09-paths-target-as-text",
    file: `${S09}/paths.ts`,
    search: "return followTarget(path.isAbsolute(link) ? path.sep : realParent, link, links + 1);",
    replace: "return realPathFollowing(path.resolve(realParent, link), links + 1);",
    description: "a dangling link's target is resolved as text (up/../x past a link escapes)",
    tests: ["permissions.test.ts", "properties.test.ts"],
  },
  {
    id: "s09-shell-parse-paren-in-quotes",
    file: `${S09}/shell-parse.ts`,
    search:
      '      while (i < command.length && command[i] !== \'"\') i += command[i] === "\\\\" ? 2 : 1;',
    replace: "      i--;",
    description: "a ) inside double quotes closes $( early, hiding the rest of the substitution",
    tests: ["permissions.test.ts", "properties.test.ts"],
  },
  {
    id: "s09-shell-parse-wrapper-values",
    file: `${S09}/shell-parse.ts`,
    search: '    if (next.startsWith("-")) i += wrapper.valued?.includes(next) ? 1 : 0;',
    replace: '    if (next.startsWith("-")) i += 0;',
    description: "a wrapper option's value (env -u HOME) is taken for the command",
    tests: ["permissions.test.ts", "properties.test.ts"],
  },
  {
    id: "s09-compact-snip-drops-last-reply",
    file: `${S09}/compact-layers.ts`,
    search: "  if (lastAssistant !== -1) tailStart = Math.min(tailStart, lastAssistant);",
    replace: "",
    description: "L1 may archive the last reply (and an unseen batch) with a short tail",
    tests: ["compact.test.ts", "properties.test.ts"],
  },
  {
    id: "s09-compact-budget-last-message-only",
    file: `${S09}/compact-layers.ts`,
    search: '  const at = messages.findLastIndex((m) => m.role === "assistant") + 1;',
    replace: "  const at = messages.length - 1;",
    description: "L3 misses the newest results when a message follows them",
    tests: ["compact.test.ts", "properties.test.ts"],
  },
  {
    id: "s01-repl-ctrl-c-no-abort",
    file: "chapters/s01-loop/src/repl.ts",
    search: "    killAll();\n    controller.abort();",
    replace: "    killAll();",
    description: "Ctrl-C during a turn kills the command but does not abort the turn",
    tests: ["loop.test.ts"],
  },
  {
    id: "s01-guard-no-sudo",
    file: "chapters/s01-loop/src/guard.ts",
    search: 'export const BLOCK_LIST = ["rm -rf /", "sudo", "shutdown", "reboot"];',
    replace: 'export const BLOCK_LIST = ["rm -rf /", "shutdown", "reboot"];',
    description: "the block list loses sudo",
    tests: ["guard.test.ts"],
  },
  {
    id: "s02-tools-edit-last-occurrence",
    file: "chapters/s02-tools/src/tools.ts",
    search: "const at = file.indexOf(needle);",
    replace: "const at = file.lastIndexOf(needle);",
    description: "edit_file replaces the last occurrence instead of the first",
    tests: ["tools.test.ts"],
  },
  {
    id: "s03-shell-parse-no-eval",
    file: "chapters/s03-permissions/src/shell-parse.ts",
    search: '  if (found.word === "eval") return [found.args.join(" ")];\n',
    replace: "",
    description: "the script given to eval is not read as a command",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s04-hooks-matcher-unanchored",
    file: "chapters/s04-hooks/src/hooks.ts",
    search: ")$`);",
    replace: ")`);",
    description: "a hook matcher need only match the start of a tool name (Rea fires for Read)",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s05-paths-dangling-link",
    file: "chapters/s05-todo/src/paths.ts",
    search: "const link = linkTarget(here);",
    replace: "const link: string | null = null;",
    description: "a dangling symlink counts as itself, not as where it points",
    tests: ["permissions.test.ts", "tools.test.ts"],
  },
  {
    id: "s05-bash-timeout-env-ignored",
    file: "chapters/s05-todo/src/bash.ts",
    search: 'positiveIntVar(harness.env, "BASH_TIMEOUT_MS", BASH_TIMEOUT_MS)',
    replace: "BASH_TIMEOUT_MS",
    description: "BASH_TIMEOUT_MS is ignored: the timeout is always 120 s",
    tests: ["loop.test.ts"],
  },
  {
    id: "s06-subagent-signal-dropped",
    file: "chapters/s06-subagent/src/subagent.ts",
    search: "      maxTurns: MAX_SUB_TURNS,\n      signal,\n",
    replace: "      maxTurns: MAX_SUB_TURNS,\n",
    description: "the child loop does not get the turn's abort signal",
    tests: ["subagent.test.ts"],
  },
  {
    id: "s07-harness-auth-token-logged",
    file: "chapters/s07-skills/src/harness.ts",
    search: "secrets: [config.apiKey, config.authToken],",
    replace: "secrets: [config.apiKey],",
    description: "the session log does not redact ANTHROPIC_AUTH_TOKEN",
    tests: ["loop.test.ts"],
  },
  {
    id: "s04-hooks-course-tool-names",
    file: "chapters/s04-hooks/src/hooks.ts",
    search: "    tool_name: tool?.claudeCode?.name ?? call.name,",
    replace: "    tool_name: call.name,",
    description: "hooks written for Claude Code see the course's tool names (bash, write_file)",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s04-hooks-transcript-misses-replies",
    file: "chapters/s04-hooks/src/hooks.ts",
    search: 'if (run.scope === "main") this.converse(message);',
    replace: "if (false) this.converse(message);",
    description: "the Claude Code transcript never gets the model's replies or tool results",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s04-hooks-continue-false-ignored",
    file: "chapters/s04-hooks/src/command-hooks.ts",
    search: "  if (reply.continue === false) {",
    replace: "  if (reply.continue === 0) {",
    description:
      "a command hook's continue: false is ignored (the prompt goes out, the Stop continues)",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s04-hooks-post-context-dropped",
    file: "chapters/s04-hooks/src/hooks.ts",
    search: "      if (outcome.context) {\n        result = {",
    replace: "      if (false) {\n        result = {",
    description: "a PostToolUse hook's additionalContext never reaches the model",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s04-tools-relative-file-path",
    file: "chapters/s04-hooks/src/tools.ts",
    search:
      "    input: (input, workdir) => ({\n" +
      "      file_path: path.resolve(workdir, input.path),\n" +
      "      content: input.content,",
    replace:
      "    input: (input, workdir) => ({\n" +
      "      file_path: input.path,\n" +
      "      content: input.content,",
    description: "a Write hook reads a workspace-relative file_path, not an absolute one",
    tests: ["hooks.test.ts"],
  },
  {
    id: "s08-compact-size-kept-after-new-content",
    file: "chapters/s08-compact/src/compact.ts",
    search: "if (known?.content === message.content) return known.chars;",
    replace: "if (known) return known.chars;",
    description: "the size estimate keeps a message's old length after its content is replaced",
    tests: ["compact.test.ts"],
  },
  {
    id: "shared-tool-specs-stale-map",
    file: "shared/src/tool.ts",
    search: "if (known && sameTools(known.tools, tools)) return known.specs;",
    replace: "if (known) return known.specs;",
    description: "toolSpecs serves a tool map's old list after the map changed",
    tests: ["shared/schema.test.ts"],
  },
  {
    id: "shared-log-reuses-replaced-content",
    file: "shared/src/log.ts",
    search: "if (before?.message === message && before.content === message.content) return before;",
    replace: "if (before?.message === message) return before;",
    description: "the session log misses a message whose content was replaced on the same object",
    tests: ["log.test.ts"],
  },
  {
    id: "s08-compact-snip-splits-head-pair",
    file: "chapters/s08-compact/src/compact-layers.ts",
    search: "    hasToolResult(messages[headEnd])\n  )\n    headEnd++;",
    replace: "    hasToolResult(messages[headEnd]) &&\n    false\n  )\n    headEnd++;",
    description: "L1 snip may cut between a tool_use and its tool_result at the head",
    tests: ["compact.test.ts"],
  },

  // ---------------------------------------------------------------- the fake API
  {
    id: "shared-fake-server-duplicate-results",
    file: "shared/src/fake-server.ts",
    search: "        if (answered.has(id)) {",
    replace: "        if (false) {",
    description: "the fake API accepts two tool_result blocks for one tool_use",
    tests: ["shared/fake-server.test.ts"],
  },

  // ---------------------------------------------------------------- s10 tasks
  {
    id: "s10-tasks-claim-ignores-blockers",
    file: `${S10}/tasks-store.ts`,
    search: "      if (blockedBy.length > 0) return { ok: false as const, blockedBy };",
    replace: "",
    description: "a task can be claimed before its prerequisites are completed",
    tests: ["tasks.test.ts"],
  },
  {
    id: "s10-tasks-cycle-accepted",
    file: `${S10}/tasks-store.ts`,
    search: "        if (!task.blockedBy.includes(dep) && reaches(tasks, dep, id)) {",
    replace: "        if (false) {",
    description: "update_task adds an edge that closes a dependency cycle",
    tests: ["tasks.test.ts"],
  },
  {
    id: "s10-tasks-unblocked-everything",
    file: `${S10}/tasks-store.ts`,
    search:
      "      const unblocked = waiting(this.list().tasks).filter((t) => !readyBefore.has(t.id));",
    replace: "      const unblocked = waiting(this.list().tasks);",
    description:
      "complete_task reports tasks that were startable before it, not only the ones it unblocked",
    tests: ["tasks.test.ts"],
  },

  // ---------------------------------------------------------------- s11 background
  {
    id: "s11-background-notification-first",
    file: `${S11}/background.ts`,
    search: "        : [...last.content, ...blocks];",
    replace: "        : [...blocks, ...last.content];",
    description: "notifications go before the tool results in the user message",
    tests: ["background.test.ts"],
  },
  {
    id: "s11-background-no-limit",
    file: `${S11}/background.ts`,
    search: "    if (this.runningCount >= MAX_RUNNING_JOBS) {",
    replace: "    if (false) {",
    description: "a ninth background job starts",
    tests: ["background.test.ts"],
  },
  {
    id: "s11-background-jobs-outlive-session",
    file: `${S11}/background.ts`,
    search: "    close: () => jobs.stop(),",
    replace: "    close: () => undefined,",
    description: "running jobs keep running after the session ends",
    tests: ["background.test.ts"],
  },
  {
    id: "s11-background-stop-ends-everything",
    file: `${S11}/background.ts`,
    search: "    await endGroups([...this.children]);",
    replace: '    await (await import("shared")).endAll();',
    description: "the session's end kills every child of the harness, not only the jobs",
    tests: ["background.test.ts"],
  },
  {
    id: "s11-background-flag-for-subagents",
    file: `${S11}/background.ts`,
    search: '      tool.name === "bash" && role === "main"',
    replace: '      tool.name === "bash"',
    description: "a subagent's bash gets the background flag too",
    tests: ["background.test.ts"],
  },
  // ---------------------------------------------------------------- s13 teams
  {
    id: "s13-teams-no-plan-gate",
    file: `${S13}/team-claims.ts`,
    search:
      '    if (target.kind !== "read" && mate.gate !== "not_required" && mate.gate !== "approved") {',
    replace: "    if (false) {",
    description: "an unapproved plan no longer blocks bash and writes",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-teams-two-tasks-per-owner",
    file: `${S13}/team-claims.ts`,
    search: "    if (mate?.assignment) {",
    replace: "    if (false) {",
    description: "a teammate can claim a second task in the same work phase",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-teams-tasks-kept-at-exit",
    file: `${S13}/team-runtime.ts`,
    search: "        await this.claims.releaseAll(mate);",
    replace: "        void 0;",
    description: "a stopped teammate's task stays in progress, owned by nobody alive",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-teams-no-cap",
    file: `${S13}/team-runtime.ts`,
    search: "      maxTurns: MAX_WORK_CALLS,",
    replace: "      maxTurns: 1000,",
    description: "a work phase is not stopped after 50 model calls",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-teams-denial-not-reported",
    file: `${S13}/team-runtime.ts`,
    search: "          if (!output.denied?.approvable) continue;",
    replace: "          if (output.denied?.approvable !== undefined) continue;",
    description: "the lead is not told of a teammate's denied call",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-teams-any-shutdown-accepted",
    file: `${S13}/protocols.ts`,
    search: '      state.status === "pending" &&',
    replace: "      true &&",
    description: "a replayed shutdown request is accepted again",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-mailbox-read-keeps-file",
    file: `${S13}/mailbox.ts`,
    search: "    rmSync(taken, { force: true });",
    replace: "    renameSync(taken, file);",
    description: "reading an inbox does not consume it: messages are delivered again",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-mailbox-torn-line-dropped",
    file: `${S13}/mailbox.ts`,
    search: "    if (rejected.length > 0) appendFileSync(",
    replace: "    if (false) appendFileSync(",
    description: "a line that is not a whole message is lost instead of kept",
    tests: ["teams.test.ts"],
  },
  {
    id: "s13-worktree-branch-removed",
    file: `${S13}/worktrees.ts`,
    search: "    for (const task of bound) await store.bind(task.id, null);",
    replace:
      '    for (const task of bound) await store.bind(task.id, null);\n    await this.git(["branch", "-D", ["wt", name].join("/")], this.options.workdir);',
    description: "removing a worktree deletes its branch",
    tests: ["teams.test.ts"],
  },
  // ---------------------------------------------------------------- s14 MCP
  {
    id: "s14-mcp-no-meta",
    file: `${S14}/mcp-client.ts`,
    search: "    const withMeta = modern\n      ? {",
    replace: "    const withMeta = null\n      ? {",
    description: "modern requests go without their _meta (the v2 server refuses them)",
    tests: ["mcp.test.ts"],
  },
  {
    id: "s14-mcp-credentials-leak",
    file: `${S14}/mcp-client.ts`,
    search: 'key !== "ANTHROPIC_API_KEY" && ',
    replace: "",
    description: "a server's environment carries the harness's API key",
    tests: ["mcp.test.ts"],
  },
  {
    id: "s14-mcp-first-page-only",
    file: `${S14}/mcp-client.ts`,
    search: "      cursor = page.nextCursor;",
    replace: "      cursor = undefined;",
    description: "tools/list stops after the first page",
    tests: ["mcp.test.ts"],
  },
  {
    id: "s14-mcp-no-collision-check",
    file: `${S14}/mcp.ts`,
    search: "    if (before)\n      throw new McpError(",
    replace: "    if (false)\n      throw new McpError(",
    description: "two tools that normalise to one name are both registered",
    tests: ["mcp.test.ts"],
  },
  {
    id: "s14-mcp-trusted-by-default",
    file: `${S14}/mcp.ts`,
    search: '      target: () => ({ kind: "exec", ask: `MCP tool',
    replace: '      target: () => ({ kind: "exec", ask: undefined && `MCP tool',
    description: "an MCP call runs without approval when no rule mentions it",
    tests: ["mcp.test.ts"],
  },
  {
    id: "s14-mcp-dead-tools-kept",
    file: `${S14}/mcp.ts`,
    search: "    this.connected.delete(name);\n    this.failed.set(name, reason);",
    replace: "    this.failed.set(name, reason);",
    description: "a server that exited keeps its tools in the next request",
    tests: ["mcp.test.ts"],
  },

  // ---------------------------------------------------------------- s15 recovery.ts
  {
    id: "s15-reminder-every-call",
    file: `${S15}/loop.ts`,
    search: "    if (sent.get(note.id) === text && texts.has(text)) continue;",
    replace: "",
    description: "every dynamic section is sent again before every call, not once per change",
    tests: ["cost.test.ts"],
  },
  {
    id: "s15-reminder-never-withdrawn",
    file: `${S15}/loop.ts`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source line, not a template
    search: '    blocks.push({ type: "text", text: reminder(`No longer current: ${first}`) });',
    replace: "",
    description: "a dynamic section that is gone stays in the conversation as if current",
    tests: ["cost.test.ts", "workflow.test.ts"],
  },
  {
    id: "s15-compact-rewrites-warm-cache",
    file: `${S15}/compact.ts`,
    search: "    if (cold || requestSize(messages, overheadOf(run)) > limits.contextLimit) {",
    replace: "    if (true) {",
    description:
      "L1 and L2 rewrite sent messages while the cache is warm and the request within budget",
    tests: ["compact.test.ts"],
  },
  {
    id: "s15-recovery-sdk-retries-on",
    file: `${S15}/recovery.ts`,
    search: "client.create(p, { ...options, maxRetries: 0 })",
    replace: "client.create(p, { ...options })",
    description: "the SDK keeps its own retries under the layer: two layers retry one call",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s15-recovery-fallback-late",
    file: `${S15}/recovery.ts`,
    search: "export const OVERLOADS_BEFORE_FALLBACK = 2;",
    replace: "export const OVERLOADS_BEFORE_FALLBACK = 3;",
    description: "the fallback model waits for three 529s in a row, not two",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s15-recovery-fallback-sticks",
    file: `${S15}/recovery.ts`,
    search:
      "      beforeTurn: async () => recovery.newTurn(),\n      afterTurn: async () => recovery.newTurn(),",
    replace: "      beforeTurn: async () => {},",
    description: "the fallback model stays on into the next turn",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s15-recovery-wait-ignores-ctrl-c",
    file: `${S15}/recovery.ts`,
    search: '    signal?.addEventListener("abort", aborted, { once: true });\n',
    replace: "",
    description: "Ctrl-C during a retry's wait is ignored until the wait ends",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s15-loop-no-stream",
    file: `${S15}/loop.ts`,
    search: '  return run.role === "main" && config.client.stream !== undefined;',
    replace: "  return false;",
    description: "the main agent's replies are asked for whole again: nothing streams",
    tests: ["stream.test.ts"],
  },
  {
    id: "s15-interrupt-no-repair",
    file: `${S15}/repl.ts`,
    search: "      repairInterrupted(history);\n",
    replace: "",
    description: "an interrupted turn's unanswered tool calls are left as they are",
    tests: ["loop.test.ts", "interrupt.test.ts", "cli.test.ts"],
  },
  {
    id: "s15-interrupt-tool-result-ok",
    file: `${S15}/interrupt.ts`,
    search: "            content: INTERRUPTED_RESULT,\n            is_error: true,\n",
    replace: "            content: INTERRUPTED_RESULT,\n",
    description: "an interrupted call's result does not say it failed",
    tests: ["interrupt.test.ts", "loop.test.ts"],
  },
  {
    id: "s15-max-tokens-no-escalation",
    file: `${S15}/recovery.ts`,
    search: "        response = await next({ maxTokens: limit });\n",
    replace: "        response = await next();\n",
    description: "a reply cut off at max_tokens is asked for again with the same limit",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s15-max-tokens-truncated-calls-run",
    file: `${S15}/recovery.ts`,
    search: "      return truncated ? { content: RESEND_SMALLER, isError: true } : null;",
    replace: "      return null;",
    description: "the tool calls of a reply cut off at max_tokens run anyway",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s15-background-no-wake",
    file: `${S15}/background.ts`,
    search: "        this.options.onEnded?.();\n",
    replace: "",
    description: "a job that ends while the agent is idle wakes nobody",
    tests: ["background.test.ts"],
  },
  {
    id: "s15-cost-past-four",
    file: `${S15}/cost.ts`,
    search: "  const messages = room > 0 ? markConversation(params.messages) : params.messages;",
    replace: "  const messages = markConversation(params.messages);",
    description: "the conversation breakpoint is added even when four are there already",
    tests: ["cost.test.ts"],
  },
  {
    id: "s15-cost-system-whole",
    file: `${S15}/cost.ts`,
    search: "  return first ? [{ ...first, cache_control: EPHEMERAL }, ...rest] : blocks;",
    replace: "  return blocks.map((block) => ({ ...block, cache_control: EPHEMERAL }));",
    description:
      "the dynamic part of the prompt is marked too (a breakpoint spent on what changes)",
    tests: ["cost.test.ts"],
  },
  {
    id: "s15-cost-cache-reads-at-input-price",
    file: `${S15}/cost.ts`,
    search: "    perToken(price.cacheRead, numbers.cacheRead)",
    replace: "    perToken(price.input, numbers.cacheRead)",
    description: "cache reads are charged at the full input price",
    tests: ["cost.test.ts"],
  },
  {
    id: "s15-mcp-call-ignores-ctrl-c",
    file: `${S15}/mcp.ts`,
    search: "connection.callTool(tool.name, input, context.signal)",
    replace: "connection.callTool(tool.name, input)",
    description: "Ctrl-C during an MCP call waits for the call's timeout; the server is never told",
    tests: ["interrupt.test.ts"],
  },
  {
    id: "s15-stages-hooks-before-permissions",
    file: `${S15}/main.ts`,
    search: "    permissionsMechanism(harness),\n    hooksMechanism(harness),",
    replace: "    hooksMechanism(harness),\n    permissionsMechanism(harness),",
    description: "PreToolUse hooks run before the permission gate, so a denied call reaches them",
    tests: ["stages.test.ts"],
  },
  {
    id: "s15-permission-denial-unnamed",
    file: `${S15}/permissions.ts`,
    search: '    if (run.turn !== "user") {',
    replace: "    if (false) {",
    description: "a scheduled, team or background turn denies without saying which turn it was",
    tests: ["permissions.test.ts"],
  },
  // ---------------------------------------------------------------- contract growth (issue 25)
  {
    id: "s15-loop-system-as-one-text",
    file: `${S15}/loop.ts`,
    search: "    system: parts ? systemBlocks(parts) : run.system,",
    replace: "    system: run.system,",
    description:
      "the main agent's prompt goes out as one text: the cache mark covers the dynamic sections too",
    tests: ["cost.test.ts"],
  },
  {
    id: "s13-loop-workdir-once-per-model-call",
    file: `${S13}/loop.ts`,
    search: "      run.workdir = workdirNow();\n      round.push(",
    replace: "      round.push(",
    description:
      "the working directory is asked only before a model call: a call after a claim in the same reply runs in the old directory",
    tests: ["teams.test.ts"],
  },

  {
    id: "s15-contract-overrides-outer-wins",
    file: `${S15}/contract.ts`,
    search: "seams.aroundModelCall((inner) => next({ ...outer, ...inner }), messages, run),",
    replace: "seams.aroundModelCall((inner) => next({ ...inner, ...outer }), messages, run),",
    description: "an outer wrapper's override beats the one nearer the call",
    tests: ["seams.test.ts"],
  },
  {
    id: "s15-max-tokens-limit-kept",
    file: `${S15}/recovery.ts`,
    search: "      if (!truncated) limit = undefined;\n",
    replace: "",
    description: "after one cut-off reply every later call of the run asks for 16 000 tokens",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s13-teams-gate-by-tool-name",
    file: `${S13}/team-runtime.ts`,
    search:
      "        this.claims.gate(mate, run.tools.get(call.name)?.target?.(call.input) ?? null),",
    replace:
      '        this.claims.gate(mate, ["bash", "read_file", "write_file", "edit_file", "glob"].includes(call.name) ? (run.tools.get(call.name)?.target?.(call.input) ?? { kind: "read" }) : null),',
    description:
      "the plan gate and the lease pick tools from a list of names: a tool they do not know runs unchecked",
    tests: ["teams.test.ts"],
  },
  {
    id: "s03-tools-glob-no-target",
    file: "chapters/s03-permissions/src/tools.ts",
    search: '  target: () => ({ kind: "read" }),\n',
    replace: "",
    description: "glob says nothing about what it touches: a bare Read rule does not cover it",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s09-memory-extract-untagged-counts",
    file: `${S09}/memory-extract.ts`,
    search: '  if (origin !== "input" && origin !== "model") return "";',
    replace:
      '  const by = origin ?? (message.role === "assistant" ? "model" : "input");\n' +
      '  if (by !== "input" && by !== "model") return "";',
    description: "a message nobody tagged counts as dialogue by its role (a fallback for tests)",
    tests: ["memory.test.ts"],
  },
  {
    id: "s14-mcp-late-probe-answer-ignored",
    file: `${S14}/mcp-client.ts`,
    search: '      if (late !== undefined) return { kind: "modern", version: pickModern(late) };\n',
    replace: "",
    description:
      "a modern server slow to start is taken for legacy: its refused handshake fails the connect",
    tests: ["mcp.test.ts"],
  },
  {
    id: "s15-harness-extendclient-ignored",
    file: `${S15}/harness.ts`,
    search: "      composed = wrap(base);",
    replace: "      void wrap;",
    description: "the harness never applies the mechanisms' extendClient wrappers",
    tests: ["seams.test.ts"],
  },
  {
    id: "s17-contract-beforestop-asks-all",
    file: `${S17}/contract.ts`,
    search:
      "      for (const seams of gatesAtStop) {\n" +
      "        const answer = await seams.beforeStop(messages, response, run);\n" +
      "        if (answer) return answer;\n" +
      "      }",
    replace:
      "      let first: string | null = null;\n" +
      "      for (const seams of gatesAtStop) {\n" +
      "        const answer = await seams.beforeStop(messages, response, run);\n" +
      "        if (answer) first ??= answer;\n" +
      "      }\n" +
      "      if (first) return first;",
    description: "beforeStop does not stop at the first answer: every later gate is asked too",
    tests: ["seams.test.ts"],
  },
  {
    id: "s12-permissions-asks-in-scheduled-turn",
    file: "chapters/s12-cron/src/permissions.ts",
    search: '  const nobody =\n    run.turn !== "user"\n',
    replace: "  const nobody =\n    false\n",
    description: "a scheduled turn asks the user for an approval nobody is there to give",
    tests: ["permissions.test.ts", "cron.test.ts"],
  },
  {
    id: "s03-permissions-denial-without-data",
    file: "chapters/s03-permissions/src/permissions.ts",
    search:
      "  return { content: message, isError: true, quiet: true, denied: { gate, reason, approvable } };",
    replace: "  return { content: message, isError: true, quiet: true };",
    description: "a refusal carries no data: a mechanism would have to read its wording",
    tests: ["permissions.test.ts"],
  },
  {
    id: "s13-hooks-no-agent-name",
    file: `${S13}/hooks.ts`,
    search: '    const agent = where.role === "teammate" ? { agent_name: where.scope } : {};',
    replace: "    const agent = {};",
    description: "a teammate's command hooks are not told which teammate made the call",
    tests: ["teams.test.ts", "hooks.test.ts"],
  },
  {
    id: "s13-contract-extendcommand-ignored",
    file: `${S13}/contract.ts`,
    search:
      "    for (const [name, command] of commands) commands.set(name, extend(name, command));",
    replace: "    for (const [name, command] of commands) commands.set(name, command);",
    description: "extendCommand is ignored: /tasks release does not exist",
    tests: ["seams.test.ts", "teams.test.ts"],
  },
  {
    id: "course-check-past-ignored",
    file: "scripts/course.ts",
    search: "          if (!later.has(match[0])) continue;",
    replace: "          continue;",
    description: "course check lets a chapter's code name a later chapter",
    tests: ["course.test.ts"],
  },
  {
    id: "s17-contract-close-stops-at-throw",
    file: `${S17}/contract.ts`,
    search:
      "    try {\n" +
      "      await mechanism.close?.();\n" +
      "    } catch (error) {\n" +
      "      report(mechanism.name, error);\n" +
      "    }",
    replace: "    await mechanism.close?.();",
    description: "a close that throws skips every later one: teammates and MCP servers live on",
    tests: ["teams.test.ts"],
  },
  {
    id: "s01-contract-second-source-replaces",
    file: "chapters/s01-loop/src/contract.ts",
    search: "    if (byKind.has(source.kind)) throw new Error(",
    replace: "    if (false) throw new Error(",
    description: "a second event source of one kind silently replaces the first",
    tests: ["seams.test.ts"],
  },
  {
    id: "s15-recovery-refuses-after-gates",
    file: `${S15}/recovery.ts`,
    search: "    async beforeCalls() {",
    replace: "    async beforeToolCall() {",
    description:
      "a call cut off at max_tokens meets the permission gate and the hooks before it is refused",
    tests: ["recovery.test.ts"],
  },
  {
    id: "s17-goal-judges-cut-off-reply",
    file: `${S17}/goal.ts`,
    search: '      if (response.stop_reason === "max_tokens") {',
    replace: "      if (false) {",
    description:
      "the goal gate judges a reply cut off at max_tokens, and its block replaces the continuation",
    tests: ["goal.test.ts"],
  },
  {
    id: "s10-lockfile-stale-force-deleted",
    file: "chapters/s10-tasks/src/lockfile.ts",
    search:
      "  try {\n    renameSync(file, aside);\n  } catch {\n    return false; // another process moved it first\n  }",
    replace:
      "  try {\n    unlinkSync(file);\n    return true;\n  } catch {\n    return false;\n  }",
    description:
      "a stale lock is reclaimed by a plain delete: two processes reclaiming at once both hold it",
    tests: ["tasks.test.ts"],
  },

  // ---------------------------------------------------------------- s16 workflow
  {
    id: "s16-workflow-journal-ignored",
    file: `${S16}/workflow-runtime.ts`,
    search: "    if (shared.journal.has(key)) {",
    replace: "    if (false) {",
    description: "a resumed run calls every agent again instead of replaying the journal",
    tests: ["workflow.test.ts", "cli.test.ts"],
  },
  {
    id: "s16-workflow-no-drain",
    file: `${S16}/workflow-core.ts`,
    search: "  const settled = await Promise.allSettled(work);",
    replace:
      '  const settled = await Promise.all(work).then((v) => v.map((value) => ({ status: "fulfilled" as const, value })));',
    description: "a failed branch ends the run while its siblings still run (no drain)",
    tests: ["workflow.test.ts"],
  },
  {
    id: "s16-workflow-stale-lock-kept",
    file: `${S16}/lockfile.ts`,
    search: "      if (!stale) return holder;",
    replace: "      return holder;",
    description: "a lock left by a killed process blocks every later resume",
    tests: ["workflow.test.ts", "cli.test.ts"],
  },
  {
    id: "s16-workflow-resume-args-unchecked",
    file: `${S16}/workflow-runtime.ts`,
    search: "    if (givenArgs !== null && canonicalJson(givenArgs) !== canonicalJson(saved))",
    replace: "    if (false)",
    description: "a resume with other args runs against the old journal",
    tests: ["workflow.test.ts"],
  },
  {
    id: "s16-workflow-cap-counts-cached",
    file: `${S16}/workflow-runtime.ts`,
    search: "    const key = agentKey(label, prompt, schema);\n    if (shared.journal.has(key)) {",
    replace:
      '    const key = agentKey(label, prompt, schema);\n    if (shared.executed.count++ >= MAX_AGENT_CALLS) throw new Error("cap");\n    if (shared.journal.has(key)) {',
    description: "replays from the journal count against the 1000-call cap",
    tests: ["workflow.test.ts"],
  },
  {
    id: "s16-workflow-no-resume-note",
    file: `${S16}/workflow.ts`,
    search: "  if (runIds.length === 0) return [];",
    replace: "  return [];",
    description: "after Ctrl-C the model is not told which run to resume",
    tests: ["workflow.test.ts"],
  },
  {
    id: "s16-workflow-resumed-run-still-named",
    file: `${S16}/workflow.ts`,
    search: "      if (at !== -1) interrupted.splice(at, 1);",
    replace: "      void at;",
    description: "a run resumed to its end is still named as interrupted in the prompt",
    tests: ["workflow.test.ts"],
  },
  // ---------------------------------------------------------------- s17 goal
  {
    id: "s17-goal-prose-salvaged",
    file: `${S17}/goal-evaluator.ts`,
    search: "    value = JSON.parse(body);",
    replace: '    value = JSON.parse(body.slice(body.indexOf("{")));',
    description: "an evaluator's prose around the JSON is salvaged instead of failing closed",
    tests: ["goal.test.ts", "cli.test.ts"],
  },
  {
    id: "s17-goal-after-stop-hooks",
    file: `${S17}/loop.ts`,
    search:
      "        (await seams.beforeStop(messages, response, run)) ??\n        (await seams.onStop(messages, response, run));",
    replace:
      "        (await seams.onStop(messages, response, run)) ??\n        (await seams.beforeStop(messages, response, run));",
    description: "the Stop hooks run before the goal gate, on every blocked return too",
    tests: ["goal.test.ts"],
  },
  {
    id: "s17-goal-no-cap",
    file: `${S17}/goal.ts`,
    search: "    if (this.blocks > this.blockCap) {",
    replace: "    if (false) {",
    description: "a goal the evaluator never accepts blocks forever",
    tests: ["goal.test.ts"],
  },
  {
    id: "s17-goal-not-restored",
    file: `${S17}/goal.ts`,
    search: '    if (!last?.active || typeof last.condition !== "string")',
    replace: "    if (true)",
    description: "an active goal is forgotten when the harness starts again",
    tests: ["goal.test.ts", "cli.test.ts"],
  },
  {
    id: "s17-goal-never-defers",
    file: `${S17}/goal.ts`,
    search: "      const decision = await controller.evaluate(messages, busy());",
    replace: "      const decision = await controller.evaluate(messages, false);",
    description: "a stop while a background job runs is judged before the job reports",
    tests: ["goal.test.ts"],
  },
  {
    id: "s17-background-never-busy",
    file: `${S17}/background.ts`,
    search: "    busy: () => jobs.runningCount > 0,",
    replace: "    busy: () => false,",
    description: "background jobs never tell the goal that work is still running",
    tests: ["goal.test.ts"],
  },
  // ---------------------------------------------------------------- the course site
  {
    id: "site-no-reminder-mark",
    file: "scripts/site-demo.ts",
    search: "      text: /<reminder>Update your todos\\.<\\/reminder>/,",
    replace: "      text: /<never-sent>/,",
    description: "s05's step-through no longer marks the reminder the harness attached",
    tests: ["demo.test.ts"],
  },
  {
    id: "site-replies-ignore-scope",
    file: "scripts/site-demo.ts",
    search: "    const queue = waiting.get(entry.scope) ?? [];",
    replace: '    const queue = waiting.get("any") ?? [];',
    description: "a reply is paired with the oldest request of any scope, not of its own",
    tests: ["site.test.ts", "demo.test.ts"],
  },
  {
    id: "site-sections-never-new",
    file: "scripts/site-demo.ts",
    search: "!seen.sections.has(sectionHead(s.text))",
    replace: "false",
    description: "a system section no earlier demo sent is no longer marked as the chapter's",
    tests: ["demo.test.ts"],
  },
  {
    id: "site-highlight-unbalanced",
    file: "scripts/site.ts",
    search: '    const prefix = open.join("");',
    replace: '    const prefix = "";',
    description: "a highlighted line no longer reopens the spans the line before left open",
    tests: ["site.test.ts", "demo.test.ts"],
  },
  {
    id: "site-readme-language-link",
    file: "scripts/site.ts",
    search:
      "    if (readme.test(inner)) return `$" + "{chapter.id}.html$" + "{anchor(langOf(inner))}`;",
    replace: "",
    description:
      "a link to a chapter's README.ja.md or README.zh.md no longer opens its page in that language",
    tests: ["site.test.ts", "demo.test.ts"],
  },
  {
    id: "site-raw-html",
    file: "scripts/site.ts",
    search: "        return esc(raw);",
    replace: "        return raw;",
    description: "README text that looks like a tag is swallowed as markup",
    tests: ["site.test.ts"],
  },
  {
    id: "site-new-file-closed",
    file: "scripts/site.ts",
    search: '(change.path)}" open><summary>',
    replace: '(change.path)}"><summary>',
    description: "the diff no longer shows the new mechanism's file open",
    tests: ["demo.test.ts"],
  },
  {
    id: "site-empties-foreign-folder",
    file: "scripts/site.ts",
    search: "    if (entries.length > 0 && !entries.includes(SITE_MARKER)) {",
    replace: "    if (false) {",
    description: "--out empties a folder the site did not make",
    tests: ["site.test.ts"],
  },
  {
    id: "site-language-switch-stuck",
    file: "scripts/site-assets/site.js",
    search: "        setLang(button.dataset.lang);",
    replace: '        setLang("en");',
    description: "the language switch no longer changes the README's language",
    tests: ["demo.test.ts"],
  },
  // ---------------------------------------------------------------- one declaration per tool
  {
    id: "s01-loop-input-unchecked",
    file: "chapters/s01-loop/src/loop.ts",
    search: "  const parsed = checkInput(tool, call.input);",
    replace: '  const parsed = { ok: true as const, value: call.input, error: "" };',
    description: "the loop runs a tool with input its schema refuses",
    tests: ["loop.test.ts"],
  },
  {
    id: "shared-schema-required-inherited",
    file: "shared/src/schema.ts",
    search:
      "  const given = (key: string) => Object.hasOwn(object, key) && object[key] !== undefined;",
    replace: "  const given = (key: string) => object[key] !== undefined;",
    description: "an inherited key (constructor) counts as a given required property",
    tests: ["shared/schema.test.ts"],
  },
  {
    id: "shared-schema-extra-properties-kept",
    file: "shared/src/schema.ts",
    search: "    if (unknown.length > 0) {",
    replace: "    if (false) {",
    description: "additionalProperties: false no longer refuses an unknown property",
    tests: ["shared/schema.test.ts", "tasks.test.ts"],
  },
  {
    id: "shared-schema-default-ignored",
    file: "shared/src/schema.ts",
    search: "      if (inner.default !== undefined) out[key] = structuredClone(inner.default);",
    replace: "",
    description: "an absent property's default is not filled in (schedule_cron's recurring)",
    tests: ["shared/schema.test.ts", "cron.test.ts"],
  },
  {
    id: "shared-schema-range-unchecked",
    file: "shared/src/schema.ts",
    search:
      "    const outside = !wrongType && ((value as number) < min || (value as number) > max);",
    replace: "    const outside = false;",
    description: "a number outside minimum and maximum passes (create_task's priority 11)",
    tests: ["shared/schema.test.ts", "tasks.test.ts"],
  },
  {
    id: "shared-schema-items-unchecked",
    file: "shared/src/schema.ts",
    search: "        checkValue(itemSchema, item, join(names, path, index), names),",
    replace: "        item,",
    description: "an array's items are not checked (a todo without content passes)",
    tests: ["shared/schema.test.ts", "todo.test.ts"],
  },
  {
    id: "s11-background-flag-not-in-schema",
    file: `${S11}/background.ts`,
    search:
      "    input_schema: { ...schema, properties: { ...schema.properties, run_in_background: FLAG } },",
    replace: "    input_schema: schema,",
    description:
      'the flag is not in bash\'s schema: the model is not told of it, and "true" passes',
    tests: ["background.test.ts"],
  },
  // ---------------------------------------------------------------- the README rules
  {
    id: "readme-check-order-ignored",
    file: "scripts/readme-check.ts",
    search: '  if (found.join("\\n") !== expected.join("\\n")) {',
    replace: "  if (false) {",
    description: "course check passes a README whose sections are missing or out of order",
    tests: ["course.test.ts"],
  },
  {
    id: "readme-check-changed-any-file",
    file: "scripts/readme-check.ts",
    search: "      if (changed.some((p) => p === name || p.endsWith(",
    replace: "      if (true || changed.some((p) => p === name || p.endsWith(",
    description: "What changed may name a file the diff does not show changed",
    tests: ["course.test.ts"],
  },
  {
    id: "readme-check-transcript-unchecked",
    file: "scripts/readme-check.ts",
    search: '    if (at < 0) return piece[0] ?? "";',
    replace: "    if (at < 0) return null;",
    description: "a Run it transcript the demo never printed passes",
    tests: ["course.test.ts"],
  },
  {
    id: "readme-check-glossary-ignored",
    file: "scripts/readme-check.ts",
    search: "        if (text.includes(variant)) {",
    replace: "        if (false) {",
    description: "a Japanese or Chinese page may use a variant its glossary rules out",
    tests: ["course.test.ts"],
  },
  {
    id: "course-check-cross-language-link",
    file: "scripts/course.ts",
    search: "    if (mine !== where && fs.existsSync(path.join(root, mine))) {",
    replace: "    if (false) {",
    description: "a Chinese README may link another chapter's English or Japanese README",
    tests: ["course.test.ts"],
  },
  {
    id: "course-check-language-line-ignored",
    file: "scripts/course.ts",
    search: "    .filter((link) => !nav.includes(link));",
    replace: "    .filter(() => false);",
    description: "a README whose first lines do not link its other languages passes",
    tests: ["course.test.ts"],
  },
  {
    id: "readme-check-stale-stats",
    file: "scripts/readme-check.ts",
    search: "    .filter((t) => t.text !== table)",
    replace: "    .filter(() => false)",
    description: "a stats table that is not what course stats prints passes",
    tests: ["course.test.ts"],
  },
];
