/**
 * s03: Permissions — three gates stand between the model's request and every tool call.
 *
 *   tool_use ──> Gate 1: deny list (bash) ──────────────── deny, nobody asked
 *                  │ settings rules: deny > ask > allow   (.claude/settings*.json)
 *                  v
 *                Gate 2: destructive command? outside WORKDIR? write to .claude/?
 *                  │ yes                       │ no
 *                  v                           v
 *                Gate 3: "Allow? [y/N]" ──y──> run ──> tool_result
 *                  │ n, EOF, or no terminal
 *                  v
 *                tool_result "Permission denied …" (is_error, names the gate)
 *
 * Run it:  pnpm --filter s03 start    (no key configured: the offline demo runs)
 *          pnpm --filter s03 demo
 * New here: permissions.ts (the gates and the rules), shell-parse.ts (reading a command
 * at command position) and settings.ts (Claude Code's .claude/settings.json and
 * settings.local.json). guard.ts is gone: the pipeline takes its place in the list below
 * and replaces its block list and its hard workspace refusal, so an approved call outside
 * the workspace really runs. bash.ts, tools.ts and the loop are unchanged: the gates learn
 * what a call touches from each tool's `target`.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { runHarness } from "./harness.ts";
import { permissionsMechanism } from "./permissions.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s03", title: "Permissions" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
