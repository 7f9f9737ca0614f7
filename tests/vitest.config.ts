import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["**/*.test.ts"],
    exclude: ["**/node_modules/**", "fixtures/**"],
    testTimeout: 20000,
    setupFiles: ["./setup.ts"],
    // Many tests wait on child processes and timers rather than the CPU: two workers keep
    // both cores busy (vitest's default on a 2-core machine is one).
    maxWorkers: 2,
    // Test files share a worker's module cache instead of each loading every chapter anew:
    // most files import the same ten-plus chapters, and reloading them per file was about a
    // sixth of the suite's time. Tests keep no module-level state that another file reads.
    isolate: false,
  },
});
