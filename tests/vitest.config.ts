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
  },
});
