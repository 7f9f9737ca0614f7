/**
 * The benchmark's own arithmetic (scripts/bench.ts): what it reports must mean what its
 * table says. The runs themselves are `pnpm bench`, never a test.
 */
import { describe, expect, it } from "vitest";
import { appendOnlyCeiling } from "../scripts/bench.ts";
import type { MessageRequest } from "../shared/src/scripted.ts";

const call = (rawChars: number, messages: MessageRequest["messages"]) => ({
  rawBody: "x".repeat(rawChars),
  body: { model: "m", max_tokens: 1, messages } as MessageRequest,
});

describe("the append-only ceiling", () => {
  it("reads all of the previous request and writes only what a call adds (its last two messages)", () => {
    const first = call(400, [{ role: "user", content: "a" }]); // 100 tokens
    const pair: MessageRequest["messages"] = [
      { role: "assistant", content: "bb" },
      { role: "user", content: "cc" },
    ];
    const added = Math.ceil(JSON.stringify(pair).length / 4);
    const second = call(10_000, [{ role: "user", content: "a" }, ...pair]);
    // The second call's raw size does not matter: append-only, it is the first plus its pair.
    expect(appendOnlyCeiling([first, second])).toBeCloseTo(100 / (100 + 100 + added), 10);
    expect(appendOnlyCeiling([first])).toBe(0);
    expect(appendOnlyCeiling([])).toBe(0);
  });
});
