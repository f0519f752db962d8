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

/**
 * Parses an event's data: JSON, or the `[DONE]` marker. Data that came on one line keeps its text
 * beside it, for a frame relayed unchanged; data spread over several `data:` lines holds line
 * breaks no relayed frame may carry, so it is serialised again if it is sent.
 */
function toSseEvent(message: EventSourceMessage): SseEvent {
  if (message.data === DONE) return eventOf(message.event, DONE);
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    throw new SseFormatError('an event did not carry JSON data');
  }
  return eventOf(message.event, data, message.data.includes('\n') ? undefined : message.data);
}

function eventOf(event: string | undefined, data: unknown, text?: string): SseEvent {
  const parsed: SseEvent = event === undefined ? { data } : { event, data };
  if (text !== undefined) parsed.text = text;
  return parsed;
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
