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

/** What tokens of one model cost, in dollars, or null for a model without a price. */
export type Pricing = (model: string, numbers: UsageNumbers) => number | null;

export class UsageMeter {
  private turn = new Map<string, UsageNumbers>();
  private session = new Map<string, UsageNumbers>();
  private turnByModel = new Map<string, UsageNumbers>();
  private sessionByModel = new Map<string, UsageNumbers>();
  /** Set by s15's cost.ts: the usage line then ends with the turn's price. */
  pricing: Pricing | null = null;

  add(scope: string, usage: ApiUsage, model?: string): void {
    const tables: Array<[Map<string, UsageNumbers>, string]> = [
      [this.turn, scope],
      [this.session, scope],
    ];
    if (model) tables.push([this.turnByModel, model], [this.sessionByModel, model]);
    for (const [table, key] of tables) {
      const entry = table.get(key) ?? zero();
      entry.input += usage.input_tokens;
      entry.output += usage.output_tokens;
      entry.cacheRead += usage.cache_read_input_tokens ?? 0;
      entry.cacheWrite += usage.cache_creation_input_tokens ?? 0;
      entry.calls += 1;
      table.set(key, entry);
    }
  }

  startTurn(): void {
    this.turn = new Map();
    this.turnByModel = new Map();
  }

  /**
   * The price of the turn's or the session's calls, over the models `pricing` knows, and
   * the models it does not (their tokens are counted, not priced); null without pricing.
   */
  cost(of: "turn" | "session"): { dollars: number; unpriced: string[] } | null {
    if (!this.pricing) return null;
    let dollars = 0;
    const unpriced: string[] = [];
    for (const [model, numbers] of of === "turn" ? this.turnByModel : this.sessionByModel) {
      const price = this.pricing(model, numbers);
      if (price === null) unpriced.push(model);
      else dollars += price;
    }
    return { dollars, unpriced };
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
    const cost = this.cost("turn");
    if (cost) line += formatCost(cost);
    return line;
  }
}

/** ` · $0.0123`, and the models without a price, if any. */
export function formatCost(cost: { dollars: number; unpriced: string[] }): string {
  const dollars =
    cost.dollars > 0 || cost.unpriced.length === 0 ? ` · $${cost.dollars.toFixed(4)}` : "";
  const unpriced = cost.unpriced.length > 0 ? ` · no price for ${cost.unpriced.join(", ")}` : "";
  return `${dollars}${unpriced}`;
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
