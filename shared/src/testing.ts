// Test and demo helpers: the fake Messages API, the scripted model and the offline demo
// runner. Imported by tests, the benchmark and each chapter's demo.ts, and loaded by a
// chapter only when it falls back to its demo.
export * from "./demo.ts";
export * from "./fake-server.ts";
export * from "./scripted.ts";
