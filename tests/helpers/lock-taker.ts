/**
 * A child process for tasks.test.ts's lock race: loads one chapter's lockfile.ts, says
 * `ready`, then answers lines on stdin. `take <file>`: one try at the lock, then `held` or
 * `busy`. `release`: lets the lock go, then `released`. Started early (loading takes most
 * of a second), so a round's two takes arrive together.
 * Run: node --import tsx/esm lock-taker.ts <lockfile.ts>
 */
import { createInterface } from "node:readline";
import type * as LockModule from "../../chapters/s10-tasks/src/lockfile.ts";

const [lockFile] = process.argv.slice(2);
const { LockFile } = (await import(lockFile!)) as typeof LockModule;
let lock: InstanceType<typeof LockFile> | null = null;
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const [verb, file] = line.split(" ");
  if (verb === "take") {
    lock = new LockFile(file!, { waitMs: 0, retryMs: 0, tornMs: 0 });
    process.stdout.write(lock.tryAcquire() ? "held\n" : "busy\n");
  } else if (verb === "release") {
    lock?.release();
    process.stdout.write("released\n");
  }
});
process.stdout.write("ready\n");
