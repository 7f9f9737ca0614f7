/**
 * s06: Subagent — hand a self-contained job to a child agent with a fresh context.
 *
 *   parent: messages ──> model ──> task({prompt}) ─────────────────────┐
 *                                                                       v
 *   child:  [user: prompt] ──> same loop, own system prompt, 5 base tools, at most 30 calls
 *            (its calls pass the same permission gates and hooks; lines marked [sub])
 *                                                                       │
 *   parent <── tool_result: the child's final text only <──────────────┘
 *
 * Run it:  pnpm --filter s06 start    (no key configured: the offline demo runs)
 *          pnpm --filter s06 demo
 * New here: subagent.ts (the task tool and runSubagent), agents.ts (agent definitions
 * from .claude/agents/, Claude Code's shape) and frontmatter.ts (their YAML header), one
 * line in the list below. The loop is unchanged: the child runs the same agentLoop, with
 * the tools, prompt sections and seams the same mechanisms give the `subagent` role (todo
 * and task are main-only); a definition narrows the tools and adds its instructions.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { permissionsMechanism } from "./permissions.ts";
import { subagentMechanism } from "./subagent.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s06", title: "Subagent" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
    hooksMechanism(harness),
    todoMechanism(harness),
    subagentMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
