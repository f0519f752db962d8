import { DONE } from './sse.ts';
import type { SseEvent, TextDialect } from './types.ts';
import { isRecord } from './json.ts';

/**
 * How one dialect's stream signals failure and completion, so the transport can tell a finished
 * stream from a broken one without knowing the dialect.
 */
export interface StreamRules {
  /** The upstream error payload this event carries, or undefined when it is not an error. */
  errorIn(event: SseEvent): unknown;
  /**
   * `last`: nothing meaningful follows, stop reading. `complete`: the answer is whole, but more
   * (e.g. usage) may follow until the connection closes. undefined: the answer is still open.
   */
  ending(event: SseEvent): 'last' | 'complete' | undefined;
}

function typeOf(event: SseEvent): unknown {
  return isRecord(event.data) ? event.data['type'] : undefined;
}

/** OpenAI chat completions (and compatible servers): `data: {error}` on failure, `[DONE]` at the end. */
const chatRules: StreamRules = {
  errorIn: (event) =>
    event.event === 'error' || (isRecord(event.data) && event.data['error'] !== undefined && event.data['error'] !== null)
      ? event.data
      : undefined,
  ending: (event) => {
    if (event.data === DONE) return 'last';
    const choices = isRecord(event.data) ? event.data['choices'] : undefined;
    // Some compatible servers omit `[DONE]`; a finish reason already completes the answer.
    const finished = Array.isArray(choices) && choices.some((c) => isRecord(c) && typeof c['finish_reason'] === 'string');
    return finished ? 'complete' : undefined;
  },
};

/** Anthropic messages: `event: error`; `message_delta` carries the stop reason, `message_stop` ends. */
const messagesRules: StreamRules = {
  errorIn: (event) => (event.event === 'error' || typeOf(event) === 'error' ? event.data : undefined),
  ending: (event) => {
    const type = typeOf(event);
    if (type === 'message_stop') return 'last';
    if (type !== 'message_delta' || !isRecord(event.data)) return undefined;
    const delta = event.data['delta'];
    return isRecord(delta) && typeof delta['stop_reason'] === 'string' ? 'complete' : undefined;
  },
};

/** OpenAI responses: `error` and `response.failed` fail; `response.completed`/`incomplete` end. */
const responsesRules: StreamRules = {
  errorIn: (event) => {
    const type = typeOf(event);
    if (type === 'error' || event.event === 'error') return event.data;
    if (type === 'response.failed' && isRecord(event.data)) return event.data['response'] ?? event.data;
    return undefined;
  },
  ending: (event) => {
    const type = typeOf(event);
    return type === 'response.completed' || type === 'response.incomplete' ? 'last' : undefined;
  },
};

/**
 * Gemini: a chunk `{error}` fails; a candidate's `finishReason` or a blocked prompt completes the
 * answer (usage may still follow).
 */
const geminiRules: StreamRules = {
  errorIn: (event) => (isRecord(event.data) && isRecord(event.data['error']) ? event.data : undefined),
  ending: (event) => {
    if (!isRecord(event.data)) return undefined;
    const candidates = event.data['candidates'];
    const finished =
      Array.isArray(candidates) && candidates.some((c) => isRecord(c) && typeof c['finishReason'] === 'string');
    const feedback = event.data['promptFeedback'];
    const blocked = isRecord(feedback) && typeof feedback['blockReason'] === 'string';
    return finished || blocked ? 'complete' : undefined;
  },
};

export const STREAM_RULES: Record<TextDialect, StreamRules> = {
  chat: chatRules,
  messages: messagesRules,
  responses: responsesRules,
  gemini: geminiRules,
};
