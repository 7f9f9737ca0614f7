/**
 * What the loop reports while it works. The loop never formats terminal
 * output: it emits these, and the printer, the session log and the usage meter listen.
 * `scope` names the agent that caused the event: "main", "sub", a teammate's name.
 */
export type Tone = "info" | "dim" | "warn" | "error" | "success" | "accent";

export type LoopEvent =
  | {
      type: "text";
      scope: string;
      text: string;
      /** Already on screen as it arrived (s15 streams): the printer only ends the line. */
      streamed?: boolean;
    }
  | { type: "text_delta"; scope: string; text: string }
  | { type: "thinking"; scope: string; text: string }
  | { type: "tool_call"; scope: string; id: string; name: string; input: unknown }
  | {
      type: "tool_result";
      scope: string;
      id: string;
      name: string;
      content: string;
      isError: boolean;
      durationMs: number;
      /** The user has already seen why (a denial line): no preview. */
      quiet?: boolean;
    }
  | { type: "notice"; scope: string; text: string; tone: Tone };

export type EventSink = (event: LoopEvent) => void;

export const noopSink: EventSink = () => {};

/**
 * Watches a run from outside (the benchmark): each model call's wall time as seen at the
 * client, and every loop event. Chapters pass it through untouched.
 */
export interface Observer {
  modelCall?(call: { scope: string; startedMs: number; endedMs: number }): void;
  event?(event: LoopEvent): void;
}
