/**
 * The benchmark's own arithmetic (scripts/bench.ts): what it reports must mean what its
 * table says. The runs themselves are `pnpm bench`, never a test.
 */
import { describe, expect, it } from "vitest";
import { appendOnlyCeiling, ROUND_ENDS, ROUND_WINDOW, roundTimes } from "../scripts/bench.ts";
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

describe("the round table", () => {
  /** Requests whose gaps (answer to next arrival) are `gaps`, each answered 5 ms after arrival. */
  const session = (gaps: number[]) => {
    const requests = [{ timing: { receivedMs: 0, answeredMs: 5 } }];
    for (const gap of gaps) {
      const receivedMs = requests.at(-1)!.timing.answeredMs + gap;
      requests.push({ timing: { receivedMs, answeredMs: receivedMs + 5 } });
    }
    return requests;
  };

  it("times a round from one answer to the next request, never the fake API's own time", () => {
    // 300 rounds: the first ROUND_WINDOW cost 2 ms, the rest 9 ms; the first ROUND_ENDS 4 ms.
    const gaps = Array.from({ length: 300 }, (_, i) =>
      i < ROUND_ENDS ? 4 : i < ROUND_WINDOW ? 2 : 9,
    );
    expect(roundTimes(session(gaps))).toEqual({ medianMs: 2, firstMs: 4, lastMs: 9 });
  });

  it("refuses a session with an unanswered request or no round at all", () => {
    const unanswered = [...session([1, 1]), { timing: { receivedMs: 99, answeredMs: null } }];
    unanswered[1]!.timing.answeredMs = null as unknown as number;
    expect(() => roundTimes(unanswered)).toThrow("request 2 was never answered");
    expect(() => roundTimes(session([]))).toThrow("no round");
  });
});
