/**
 * The mechanism contract: the one shape every mechanism of the course has.
 *
 * Each mechanism file (bash.ts, permissions.ts, hooks.ts, memory.ts …) exports one factory
 * that returns a `Mechanism`: what it adds to the harness, every part optional. `main.ts`
 * is then configuration plus an ordered list of mechanisms, and harness.ts joins them:
 * tools and prompt sections in list order, loop seams by loop.ts's rules, turn hooks and
 * sources in the REPL. A new chapter adds its file and one line to that list.
 * docs/architecture.md has the whole picture.
 */
import type { ModelClient, Tone, ToolDefinition } from "shared";
import type { LoopSeams, Role } from "./loop.ts";
import type { PromptSection } from "./prompt.ts";
import type { EventSource, SlashCommand, TurnHooks } from "./repl.ts";

/** One line of the start-up banner. */
export interface BannerLine {
  text: string;
  tone?: Tone;
}

/** Who a loop run is for: its role, and the scope its lines and log records carry. */
export interface LoopRun {
  role: Role;
  scope: string;
}

export interface Mechanism {
  /** A short name for logs: "shell", "permissions", "memory" … */
  name: string;
  /** The tools an agent of `role` gets from this mechanism, in the order the model sees them. */
  tools?(role: Role): ToolDefinition[];
  /**
   * Extends a tool an earlier mechanism gives: same name, same place in the list (s11 gives
   * `bash` its background flag this way, without editing bash.ts). Called for every tool of
   * the agent; return the tool as it is to leave it alone.
   */
  extendTool?(tool: ToolDefinition, role: Role): ToolDefinition;
  /**
   * Wraps the model client every agent and side call uses (s15 puts its retries here).
   * Applied in list order, each to the client the earlier ones made, so the last is
   * outermost; `harness.client` forwards to the result, so a client a factory kept works too.
   */
  extendClient?(client: ModelClient): ModelClient;
  /** Its system prompt sections for an agent of `role` (stable ones first, dynamic last). */
  sections?(role: Role): PromptSection[];
  /** Its loop seams for one run of the loop (called as each run starts, so state starts fresh). */
  loop?(run: LoopRun): LoopSeams | null;
  /** Slash commands, by name without the `/`. */
  commands?: Record<string, SlashCommand>;
  /**
   * Extends a slash command an earlier mechanism gives, as `extendTool` does a tool (s13
   * adds `/tasks release` this way). Called for every command; return it as it is to leave it.
   */
  extendCommand?(name: string, command: SlashCommand): SlashCommand;
  /** Called once before the first prompt: its lines for the banner. */
  start?(): BannerLine[];
  /** The main agent's turn lifecycle: prepare, before and after each turn. */
  turn?: TurnHooks;
  /** Event sources for the REPL's queue (timers, inboxes, finished jobs). */
  sources?: EventSource[];
  /**
   * True while work it started still runs and will report back: a background job (s11), a
   * teammate at work (s13). s17's goal waits for it instead of judging too early.
   */
  busy?(): boolean;
  /** Called once when the session ends: stop timers, end child processes, release locks. */
  close?(): void | Promise<void>;
}
