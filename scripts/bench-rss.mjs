/**
 * Preload for `pnpm bench` (scripts/bench.ts): `node --import tsx/esm --import <this file> …`.
 * Its only job: when the process exits, append "<pid> <max RSS in KiB>" to the file named by
 * BENCH_RSS_FILE (nothing when that variable is unset).
 */
import { appendFileSync } from "node:fs";

const { BENCH_RSS_FILE: file } = process.env;
if (file) {
  process.on("exit", () => {
    appendFileSync(file, `${process.pid} ${process.resourceUsage().maxRSS}\n`);
  });
}
