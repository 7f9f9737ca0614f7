import type Anthropic from "@anthropic-ai/sdk";

/**
 * A complete `Message` as the API returns it, for tests that fake the model client
 * in-process. `stop_reason` follows the content: tool_use when it asks for a tool.
 */
export function fakeMessage(content: Anthropic.ContentBlock[]): Anthropic.Message {
  return {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: "claude-test",
    content,
    stop_reason: content.some((block) => block.type === "tool_use") ? "tool_use" : "end_turn",
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: {
      input_tokens: 1,
      output_tokens: 1,
      cache_creation_input_tokens: null,
      cache_read_input_tokens: null,
      cache_creation: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: "standard",
      inference_geo: null,
      speed: null,
    },
  };
}
