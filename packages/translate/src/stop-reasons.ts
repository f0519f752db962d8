/** Stop/finish reasons: one table per direction, so every mapping is visible in one place. */
import type { Dialect, StopReason } from './ir.ts';

/**
 * Neutral → wire. The responses column is the `incomplete_details.reason` when not `completed`
 * (its `status` is then `incomplete`); gemini and responses have no "tool use" reason: a function
 * call in the output says it.
 */
export const STOP_TO_WIRE: Record<StopReason, Record<Dialect, string>> = {
  end: { chat: 'stop', messages: 'end_turn', responses: 'completed', gemini: 'STOP' },
  stop_sequence: { chat: 'stop', messages: 'stop_sequence', responses: 'completed', gemini: 'STOP' },
  max_tokens: { chat: 'length', messages: 'max_tokens', responses: 'max_output_tokens', gemini: 'MAX_TOKENS' },
  tool_use: { chat: 'tool_calls', messages: 'tool_use', responses: 'completed', gemini: 'STOP' },
  content_filter: { chat: 'content_filter', messages: 'refusal', responses: 'content_filter', gemini: 'SAFETY' },
};

/** Wire → neutral; a value missing here reads as `end`. */
const WIRE_TO_STOP: Record<Dialect, Record<string, StopReason>> = {
  chat: { stop: 'end', length: 'max_tokens', tool_calls: 'tool_use', function_call: 'tool_use', content_filter: 'content_filter' },
  messages: {
    end_turn: 'end',
    pause_turn: 'end',
    stop_sequence: 'stop_sequence',
    max_tokens: 'max_tokens',
    model_context_window_exceeded: 'max_tokens',
    tool_use: 'tool_use',
    refusal: 'content_filter',
  },
  responses: { completed: 'end', max_output_tokens: 'max_tokens', content_filter: 'content_filter' },
  gemini: {
    STOP: 'end',
    MAX_TOKENS: 'max_tokens',
    SAFETY: 'content_filter',
    RECITATION: 'content_filter',
    BLOCKLIST: 'content_filter',
    PROHIBITED_CONTENT: 'content_filter',
    SPII: 'content_filter',
    IMAGE_SAFETY: 'content_filter',
  },
};

/**
 * Reads a wire reason. A normal stop with tool calls in the output is `tool_use`: responses and
 * gemini only say "stopped", and some chat-compatible servers answer `stop` with tool calls.
 */
export function readStopReason(dialect: Dialect, wire: string | undefined, hasToolCalls: boolean): StopReason {
  const reason = (wire === undefined ? undefined : WIRE_TO_STOP[dialect][wire]) ?? 'end';
  return reason === 'end' && hasToolCalls ? 'tool_use' : reason;
}
