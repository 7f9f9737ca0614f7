import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["**/*.test.ts"],
    exclude: ["**/node_modules/**", "fixtures/**"],
    testTimeout: 20000,
    setupFiles: ["./setup.ts"],
    // Many tests wait on child processes and timers rather than the CPU: three workers keep
    // two cores busy (vitest's default on a 2-core machine is one). Measured on 2 cores with
    // s15: 2 workers 65 s, 3 workers 52-57 s, 4 workers 55 s.
    maxWorkers: 3,
    // Test files share a worker's module cache instead of each loading every chapter anew:
    // most files import the same ten-plus chapters, and reloading them per file was about a
    // sixth of the suite's time. Tests keep no module-level state that another file reads.
    isolate: false,
  },
});
