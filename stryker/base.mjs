/**
 * What every generated mutation run shares (`pnpm mutate --generated`). A module is mutated
 * in the chapter that introduces it: the suites test that copy (tests/chapters.ts,
 * `moduleVersions`), and `course check` keeps every later copy byte-identical.
 */
export function mutationRun(module, file) {
  return {
    mutate: [file],
    testRunner: "vitest",
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: `tests/stryker/${module}.ts`, dir: "tests", related: false },
    coverageAnalysis: "perTest",
    reporters: ["json", "progress"],
    jsonReporter: { fileName: `reports/stryker/${module}.json` },
    incremental: true,
    incrementalFile: `stryker/${module}.incremental.json`,
    concurrency: 2,
    tempDirName: ".stryker-tmp",
    cleanTempDir: "always",
  };
}
