import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  createAnthropic,
  DEFAULT_MODEL_ID,
  loadConfig,
  loadDotenv,
  PLACEHOLDER_API_KEY,
  positiveIntVar,
} from "../../shared/src/index.ts";
import { reply, ScriptedModel, startFakeServer, text } from "../../shared/src/testing.ts";
import { tempWorkspace } from "../helpers/run.ts";

describe("configuration", () => {
  const dir = tempWorkspace("config");

  it("has no credentials and no base URL: offline, with the default model and cwd", () => {
    const config = loadConfig({}, dir);
    expect(config).toMatchObject({ offline: true, model: DEFAULT_MODEL_ID, workdir: dir });
  });

  it("uses the key when both key and token are set, and says so once", () => {
    const config = loadConfig({ ANTHROPIC_API_KEY: "k", ANTHROPIC_AUTH_TOKEN: "t" }, dir);
    expect(config).toMatchObject({ apiKey: "k", authToken: null, offline: false });
    expect(config.notices).toEqual([
      "Both ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are set; using ANTHROPIC_API_KEY.",
    ]);
  });

  it("uses a base URL without credentials with a placeholder key", () => {
    const config = loadConfig({ ANTHROPIC_BASE_URL: "http://localhost:4000/" }, dir);
    expect(config).toMatchObject({
      offline: false,
      apiKey: PLACEHOLDER_API_KEY,
      baseURL: "http://localhost:4000",
    });
  });

  it("takes WORKDIR relative to INIT_CWD, where the user ran pnpm", () => {
    mkdirSync(path.join(dir, "sub"), { recursive: true });
    expect(loadConfig({ INIT_CWD: dir, WORKDIR: "sub" }, "/").workdir).toBe(path.join(dir, "sub"));
    expect(loadConfig({ INIT_CWD: dir }, "/").workdir).toBe(dir);
  });

  it.each([
    [{ WORKDIR: "/no/such/dir" }, "WORKDIR does not exist: /no/such/dir"],
    [{ ANTHROPIC_BASE_URL: "not a url" }, "ANTHROPIC_BASE_URL is not a valid URL: 'not a url'"],
    [{ ANTHROPIC_BASE_URL: "ftp://x" }, "ANTHROPIC_BASE_URL must start with http:// or https://"],
  ])("fails with one clear line for %j", (env, message) => {
    expect(() => loadConfig(env, dir)).toThrow(ConfigError);
    expect(() => loadConfig(env, dir)).toThrow(message);
  });

  it("refuses a WORKDIR that is a file", () => {
    writeFileSync(path.join(dir, "file"), "x");
    expect(() => loadConfig({ WORKDIR: path.join(dir, "file") }, dir)).toThrow(
      "WORKDIR is not a directory",
    );
  });

  it("reads numeric overrides and names a bad one", () => {
    expect(positiveIntVar({}, "BASH_TIMEOUT_MS", 7)).toBe(7);
    expect(positiveIntVar({ BASH_TIMEOUT_MS: "250" }, "BASH_TIMEOUT_MS", 7)).toBe(250);
    for (const bad of ["0", "-5", "1.5", "abc"]) {
      expect(() => positiveIntVar({ BASH_TIMEOUT_MS: bad }, "BASH_TIMEOUT_MS", 7)).toThrow(
        `BASH_TIMEOUT_MS must be a positive integer (got '${bad}')`,
      );
    }
  });

  it("merges .env under the real environment (real variables win)", () => {
    const file = path.join(dir, ".env");
    writeFileSync(file, "MODEL_ID=from-file\nANTHROPIC_API_KEY=file-key\n");
    const env = loadDotenv({ MODEL_ID: "from-env" }, file);
    expect(env).toMatchObject({ MODEL_ID: "from-env", ANTHROPIC_API_KEY: "file-key" });
    expect(loadDotenv({ A: "1" }, path.join(dir, "missing.env"))).toEqual({ A: "1" });
  });
});

describe("client factory", () => {
  it.each([
    [{ apiKey: "the-key", authToken: null }, "Bearer the-key"],
    [{ apiKey: null, authToken: "the-token" }, "Bearer the-token"],
  ])("sends exactly one auth header (%j)", async (credentials, expected) => {
    const server = await startFakeServer({
      model: new ScriptedModel([{ when: () => true, reply: reply(text("ok")) }]),
    });
    // Environment credentials must not leak in as a second header.
    const saved = { ...process.env };
    process.env.ANTHROPIC_API_KEY = "env-key";
    process.env.ANTHROPIC_AUTH_TOKEN = "env-token";
    try {
      const client = createAnthropic({ ...credentials, baseURL: server.url });
      const message = await client.messages.create({
        model: "m",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
      });
      expect(message.content).toEqual([{ type: "text", text: "ok", citations: null }]);
      const headers = server.requests[0]!.headers;
      const auth = [headers.authorization, headers["x-api-key"]].filter(Boolean);
      expect(auth).toEqual([expected]);
    } finally {
      process.env = saved;
      await server.close();
    }
  });

  it("is an SDK client pointed at the configured base URL", () => {
    const client = createAnthropic({ apiKey: "k", authToken: null, baseURL: "http://127.0.0.1:9" });
    // The SDK's CommonJS build (shared loads it so start-up stays fast): same class name, API.
    expect(client.constructor.name).toBe(Anthropic.name);
    expect(typeof client.messages.create).toBe("function");
    expect(client.baseURL).toBe("http://127.0.0.1:9");
  });
});
