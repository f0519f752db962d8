import { createParser } from 'eventsource-parser';
import type { EventSourceMessage } from 'eventsource-parser';
import type { SseEvent } from './types.ts';

/** A stream that is not valid server-sent events carrying JSON; the transport maps it to `malformed`. */
export class SseFormatError extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'SseFormatError';
  }
}

/** One event may be large (a Gemini chunk with an inline image), never unbounded. */
const MAX_EVENT_CHARS = 32 * 1024 * 1024;

/** OpenAI-style end marker; kept as the literal string so dialects can pass it through. */
export const DONE = '[DONE]';

/** Parses an event's data: JSON, or the `[DONE]` marker. */
function toSseEvent(message: EventSourceMessage): SseEvent {
  if (message.data === DONE) return eventOf(message.event, DONE);
  try {
    return eventOf(message.event, JSON.parse(message.data));
  } catch {
    throw new SseFormatError('an event did not carry JSON data');
  }
}

function eventOf(event: string | undefined, data: unknown): SseEvent {
  return event === undefined ? { data } : { event, data };
}

/**
 * Turns raw body chunks into events. An unterminated last event is dropped, as the SSE standard
 * says; the caller notices the answer is incomplete by the missing end event.
 */
export async function* parseSse(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const ready: EventSourceMessage[] = [];
  let overflow = false;
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (message) => ready.push(message),
    onError: (error) => {
      // Unknown fields and bad retry values are ignorable per the standard; a runaway event is not.
      if (error.type === 'max-buffer-size-exceeded') overflow = true;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of chunks) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (overflow) throw new SseFormatError('an event exceeded the size limit');
    while (ready.length > 0) yield toSseEvent(ready.shift()!);
  }
  parser.feed(decoder.decode());
  parser.reset();
  while (ready.length > 0) yield toSseEvent(ready.shift()!);
}
