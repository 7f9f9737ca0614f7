/**
 * A child process for tasks.test.ts's race: loads one chapter's task store, says `ready`,
 * and on its first line of stdin, `{"workdir": …, "ids": […]}`, claims every task given,
 * in order, as `owner`, printing one line per claim. Started early (loading takes most of
 * a second), told to go when the test is ready.
 * Run: node --import tsx/esm task-claimer.ts <tasks-store.ts> <owner>
 */
import { createInterface } from "node:readline";
import type * as StoreModule from "../../chapters/s10-tasks/src/tasks-store.ts";

const [storeFile, owner] = process.argv.slice(2);
const { TaskStore } = (await import(storeFile!)) as typeof StoreModule;
const lines = createInterface({ input: process.stdin });
lines.once("line", async (line) => {
  const { workdir, ids } = JSON.parse(line) as { workdir: string; ids: string[] };
  const store = new TaskStore(workdir);
  for (const id of ids) {
    try {
      const claimed = await store.claim(id, owner!);
      process.stdout.write(claimed.ok ? `Claimed ${id}\n` : `Blocked ${id}\n`);
    } catch (error) {
      process.stdout.write(`Error: ${(error as Error).message}\n`);
    }
  }
  lines.close();
});
process.stdout.write("ready\n");
