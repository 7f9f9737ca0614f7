/**
 * s05: TodoWrite — the model writes its plan down, and the harness keeps it in view.
 *
 *   model ──> todo_write([{content, status}, …]) ──> the list is replaced ──> shown + returned
 *     │
 *     └── 3 tool rounds in a row without todo_write?
 *           └── the next results message ends with  <reminder>Update your todos.</reminder>
 *               (after every tool_result block, in the same user message)
 *
 * Run it:  pnpm --filter s05 start    (no key configured: the offline demo runs)
 *          pnpm --filter s05 demo
 * New here: todo.ts (the list, the todo_write tool, the reminder), one line in the list
 * below. The loop is unchanged: the reminder plugs into its afterResults seam. From this
 * chapter on the sample hooks keep quiet when they change nothing (their notes go to the
 * session log), so the terminal shows what matters.
 */
import { type MainIO, runIfEntry } from "shared";
import { bashMechanism } from "./bash.ts";
import { runHarness } from "./harness.ts";
import { hooksMechanism } from "./hooks.ts";
import { permissionsMechanism } from "./permissions.ts";
import { todoMechanism } from "./todo.ts";
import { filesMechanism } from "./tools.ts";

export const CHAPTER = { id: "s05", title: "TodoWrite" };

export function main(io: MainIO): Promise<number> {
  return runHarness(io, CHAPTER, main, (harness) => [
    bashMechanism(harness),
    filesMechanism(harness),
    permissionsMechanism(harness),
    hooksMechanism(harness),
    todoMechanism(harness),
  ]);
}

runIfEntry(import.meta.url, main);
