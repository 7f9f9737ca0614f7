/**
 * The vitest side of a generated mutation run (`pnpm mutate --generated`, stryker/): one
 * module's narrowest suites, nothing else.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, mergeConfig, type ViteUserConfig } from "vitest/config";
import base from "../vitest.config.ts";

/** tests/, wherever the run starts (Stryker runs from its sandbox's root). */
const TESTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export function mutationRun(files: string[], testNamePattern?: RegExp): ViteUserConfig {
  const config = mergeConfig(base, defineConfig({ root: TESTS }));
  // Stryker's vitest runner works in worker threads, which tsx's hooks do not reach: the
  // chapters go through vite's transform instead of loading natively.
  config.test = { ...config.test, include: files, sequence: {}, server: {}, execArgv: [] };
  if (testNamePattern) config.test.testNamePattern = testNamePattern;
  return config;
}
