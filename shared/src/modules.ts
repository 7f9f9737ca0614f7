/**
 * Packages loaded on first use. Under the TypeScript loader (tsx) every module of a
 * package's ESM entry passes through the loader's hooks, so importing `yaml` or the SDK
 * at the top of a file made the first prompt wait up to half a second for code the session
 * may never run. `onFirstUse` loads the package's CommonJS build, once, when it is first
 * needed.
 */
import { createRequire } from "node:module";

/** A getter for package `name`, resolved from the file at `moduleUrl` (`import.meta.url`). */
export function onFirstUse<T>(moduleUrl: string, name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= createRequire(moduleUrl)(name) as T;
    return loaded;
  };
}
