// What every chapter's runtime uses. The fake Messages API, the scripted model and the demo
// runner are test and demo helpers: they live behind `shared/testing`, so a normal run never
// loads them.
export * from "./client.ts";
export * from "./config.ts";
export * from "./events.ts";
export * from "./io.ts";
export * from "./log.ts";
export * from "./modules.ts";
export * from "./printer.ts";
export * from "./processes.ts";
export * from "./reader.ts";
export * from "./schema.ts";
export * from "./state.ts";
export * from "./style.ts";
export * from "./tool.ts";
export * from "./usage.ts";
