/**
 * Interrupts (s15): Ctrl-C during a turn cancels that turn and keeps the session. The one
 * AbortSignal of the turn reaches the model call (its stream stops), the foreground command
 * (its process group is killed), a subagent's loop and an MCP call (which sends
 * `notifications/cancelled`); teammates, background jobs and queued lines go on.
 *
 * The turn is kept, not discarded, and repaired so the next request is one the API accepts:
 *
 *   ... assistant [tool_use a, tool_use b]          (the calls never answered)
 *   ──> user [tool_result a: Interrupted by the user (is_error), tool_result b: …,
 *             text: [Interrupted by the user]]
 *   ... user "the typed line"                       (the model was still thinking)
 *   ──> user ["the typed line", text: [Interrupted by the user]]
 *
 * A partial reply is never in the history (the loop appends only whole messages), so it is
 * simply gone. The next turn's input joins the repaired user message, so roles still
 * alternate.
 */
import type Anthropic from "@anthropic-ai/sdk";

type MessageParam = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;

/** What each unanswered tool call gets. */
export const INTERRUPTED_RESULT = "Interrupted by the user";
/** The text block that tells the model the turn was cut short. */
export const INTERRUPTED_NOTE = "[Interrupted by the user]";

/** The user messages a repair made or rewrote: the next input joins such a message. */
const repaired = new WeakSet<MessageParam>();

const blocksOf = (content: MessageParam["content"]): Block[] =>
  typeof content === "string" ? [{ type: "text", text: content }] : content;

/**
 * Makes a cancelled turn's history valid again, in place: answers every tool_use of a last
 * assistant message with an is_error result, and ends with a user message holding the note.
 */
export function repairInterrupted(history: MessageParam[]): void {
  const last = history.at(-1);
  if (!last) return;
  const note: Block = { type: "text", text: INTERRUPTED_NOTE };
  if (last.role === "user") {
    const noted: MessageParam = { role: "user", content: [...blocksOf(last.content), note] };
    repaired.add(noted);
    history[history.length - 1] = noted;
    return;
  }
  const results: Block[] = blocksOf(last.content).flatMap((block) =>
    block.type === "tool_use"
      ? [
          {
            type: "tool_result",
            tool_use_id: block.id,
            content: INTERRUPTED_RESULT,
            is_error: true,
          },
        ]
      : [],
  );
  const answered: MessageParam = { role: "user", content: [...results, note] };
  repaired.add(answered);
  history.push(answered);
}

/**
 * The turn's first message: after an interrupted turn the history ends with the repaired
 * user message, and the input joins it (a new object, so a failed turn can restore the old
 * one); otherwise it is a message of its own.
 */
export function appendInput(history: MessageParam[], input: MessageParam["content"]): MessageParam {
  const last = history.at(-1);
  if (!last || !repaired.has(last)) {
    const message: MessageParam = { role: "user", content: input };
    history.push(message);
    return message;
  }
  const joined: MessageParam = {
    role: "user",
    content: [...blocksOf(last.content), ...blocksOf(input)],
  };
  history[history.length - 1] = joined;
  return joined;
}
