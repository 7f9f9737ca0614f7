/**
 * Token accounting. Every model call, main loop or side call, is added
 * under its scope; after each turn the REPL prints the turn's totals as one dim line.
 */
export interface UsageNumbers {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  calls: number;
}

export interface ApiUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

const zero = (): UsageNumbers => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, calls: 0 });

export class UsageMeter {
  private turn = new Map<string, UsageNumbers>();
  private session = new Map<string, UsageNumbers>();

  add(scope: string, usage: ApiUsage): void {
    for (const table of [this.turn, this.session]) {
      const entry = table.get(scope) ?? zero();
      entry.input += usage.input_tokens;
      entry.output += usage.output_tokens;
      entry.cacheRead += usage.cache_read_input_tokens ?? 0;
      entry.cacheWrite += usage.cache_creation_input_tokens ?? 0;
      entry.calls += 1;
      table.set(scope, entry);
    }
  }

  startTurn(): void {
    this.turn = new Map();
  }

  turnTotals(): UsageNumbers {
    return sum(this.turn.values());
  }

  turnByScope(): Map<string, UsageNumbers> {
    return new Map(this.turn);
  }

  /** The session's numbers of each scope (s13's `/team` shows a teammate's tokens). */
  sessionByScope(): Map<string, UsageNumbers> {
    return new Map(this.session);
  }

  sessionTotals(): UsageNumbers {
    return sum(this.session.values());
  }

  /** `[usage] in 1234 / out 56 tokens, cache read 1000 (2 calls; sub: 1)`, or null. */
  formatTurn(): string | null {
    const total = this.turnTotals();
    if (total.calls === 0) return null;
    let line = `[usage] in ${total.input} / out ${total.output} tokens`;
    if (total.cacheRead) line += `, cache read ${total.cacheRead}`;
    if (total.cacheWrite) line += `, cache write ${total.cacheWrite}`;
    const others = [...this.turn.entries()].filter(([scope]) => scope !== "main");
    const detail = others.map(([scope, n]) => `${scope}: ${n.calls}`).join(", ");
    line += ` (${total.calls} call${total.calls === 1 ? "" : "s"}${detail ? `; ${detail}` : ""})`;
    return line;
  }
}

function sum(entries: Iterable<UsageNumbers>): UsageNumbers {
  const total = zero();
  for (const n of entries) {
    total.input += n.input;
    total.output += n.output;
    total.cacheRead += n.cacheRead;
    total.cacheWrite += n.cacheWrite;
    total.calls += n.calls;
  }
  return total;
}
