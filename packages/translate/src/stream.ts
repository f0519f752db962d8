/** Stream translation: a dialect's parser feeding another dialect's emitter, or a passthrough. */
import { CODECS } from './codecs.ts';
import { streamFailureEvents } from './failure.ts';
import type { Dialect, OutputEvent, ResponseContext, SseEvent, StreamEvent, StreamFailure, Usage } from './ir.ts';
import { isRecord, num, rec, str } from './json.ts';

export interface StreamTranslator {
  /** One upstream event in; the client-dialect events it produces out (possibly none). */
  push(event: SseEvent): OutputEvent[];
  /** The upstream stream ended. May produce the final events (gemini only finishes here). */
  end(): OutputEvent[];
  /**
   * The upstream's final usage, known once the upstream stream finished normally (with or before
   * the `carriesUsage` event). Undefined after a finish = a success without usage; undefined after
   * a failure = the usage never arrived (partial counts some protocols send early do not count).
   */
  usage(): Usage | undefined;
  /**
   * The client dialect's error event(s) for a stream that fails after what the caller forwarded as
   * it came: every event before the usage-bearing one (which the caller holds until it is billed,
   * with whatever follows it). Responses events continue that stream: its response, its next
   * sequence number. Also after the upstream finished, for a failure of the caller's own (its
   * billing). Renders only: the translator is not closed by it.
   */
  fail(failure: StreamFailure): OutputEvent[];
}

function errorOf(events: StreamEvent[]): StreamFailure | undefined {
  const error = events.find((e) => e.type === 'error');
  return error?.type === 'error' ? { message: error.message, code: error.code } : undefined;
}

/** `data` with the public model in place of the provider's; `data` itself where it names none or already that one. */
function withModel(dialect: Dialect, data: unknown, model: string): unknown {
  if (!isRecord(data)) return data;
  switch (dialect) {
    case 'chat':
      return 'model' in data && data.model !== model ? { ...data, model } : data;
    case 'messages':
      return isRecord(data.message) && data.message.model !== model ? { ...data, message: { ...data.message, model } } : data;
    case 'responses':
      return isRecord(data.response) && data.response.model !== model ? { ...data, response: { ...data.response, model } } : data;
    case 'gemini':
      return 'modelVersion' in data && data.modelVersion !== model ? { ...data, modelVersion: model } : data;
  }
}

/**
 * Same dialect on both sides: events pass with only the model rewritten, and the parser still runs
 * for usage and to notice failures. An event whose model needs no rewriting keeps the provider's
 * own JSON text (`OutputEvent.text`), so it leaves without being serialised again. The
 * usage-bearing event is only known by what follows it in chat (servers may repeat usage on many
 * chunks) and gemini (every chunk has usage), so the latest candidate is held back one event.
 */
/** A translator before `fail`, which `createStreamTranslator` adds for every kind alike. */
type Translating = Omit<StreamTranslator, 'fail'>;

function createPassthrough(dialect: Dialect, ctx: ResponseContext): Translating {
  const codec = CODECS[dialect];
  const parser = codec.createStreamParser(ctx);
  let held: OutputEvent | undefined;
  /** Chat: the usage-bearing event has left (at OpenAI's usage chunk, before `[DONE]`). */
  let finalSent = false;
  let closed = false;
  let nextSequence = 0;
  let chatHead = { id: ctx.id, created: ctx.created };

  const release = (): OutputEvent[] => {
    const out = held === undefined ? [] : [held];
    held = undefined;
    return out;
  };
  const releaseFinal = (): OutputEvent[] => {
    if (held !== undefined) held.carriesUsage = true;
    return release();
  };
  /**
   * Chat: the usage chunk, or one without usage so the caller still has a final event to extend;
   * nothing when it left already (OpenAI's usage chunk, before `[DONE]`).
   */
  const chatFinal = (): OutputEvent[] => {
    if (finalSent) return [];
    if (held !== undefined) return releaseFinal();
    const data = { ...chatHead, object: 'chat.completion.chunk', model: ctx.model, choices: [], usage: null };
    return [{ data, carriesUsage: true }];
  };
  let finished = false;
  const failWith = (failure: StreamFailure): OutputEvent[] => {
    closed = true;
    return [...release(), ...codec.errorEvents(failure, ctx, nextSequence)];
  };

  return {
    push(event: SseEvent): OutputEvent[] {
      if (closed) return [];
      const ir = parser.push(event);
      const failure = errorOf(ir);
      if (failure !== undefined) return failWith(failure);
      const data = withModel(dialect, event.data, ctx.model);
      const out: OutputEvent = event.event === undefined ? { data } : { event: event.event, data };
      if (data === event.data && event.text !== undefined) out.text = event.text;
      const fields = rec(data);
      nextSequence = (num(fields.sequence_number) ?? nextSequence - 1) + 1;
      finished ||= ir.some((e) => e.type === 'finish');
      switch (dialect) {
        case 'chat':
          if (data === '[DONE]') {
            closed = true;
            return [...chatFinal(), out];
          }
          if (finalSent) return [out];
          chatHead = { id: str(fields.id) ?? chatHead.id, created: num(fields.created) ?? chatHead.created };
          if (isRecord(fields.usage)) {
            const previous = release();
            held = out;
            if (!finished) return previous;
            // The parser finished at this chunk: OpenAI's final usage, marked now, not at `[DONE]`.
            finalSent = true;
            return [...previous, ...releaseFinal()];
          }
          return [...release(), out];
        case 'gemini': {
          const previous = release();
          held = out;
          return previous;
        }
        case 'messages':
          if (fields.type === 'message_delta') out.carriesUsage = true;
          closed = finished;
          return [out];
        case 'responses':
          if (finished) out.carriesUsage = true;
          closed = finished;
          return [out];
      }
    },
    end(): OutputEvent[] {
      if (closed) return [];
      closed = true;
      const ir = parser.end();
      const failure = errorOf(ir);
      if (failure !== undefined) return failWith(failure);
      finished ||= ir.some((e) => e.type === 'finish');
      if (!finished) return release();
      switch (dialect) {
        case 'chat':
          // The upstream finished but never sent `[DONE]`.
          return [...chatFinal(), { data: '[DONE]' }];
        case 'gemini':
          return releaseFinal();
        case 'messages':
          return [{ event: 'message_stop', data: { type: 'message_stop' } }];
        case 'responses':
          return [];
      }
    },
    usage: () => (finished ? parser.usage() : undefined),
  };
}

function createTranslation(from: Dialect, to: Dialect, ctx: ResponseContext): Translating {
  const parser = CODECS[from].createStreamParser(ctx);
  const emitter = CODECS[to].createStreamEmitter(ctx);
  let finished = false;
  const emit = (events: StreamEvent[]): OutputEvent[] =>
    events.flatMap((e) => {
      if (e.type === 'finish') finished = true;
      return emitter.push(e);
    });
  return {
    push: (event) => emit(parser.push(event)),
    end: () => [...emit(parser.end()), ...emitter.end()],
    usage: () => (finished ? parser.usage() : undefined),
  };
}

/** An event's data as a failure event reads it: a JSON object, or nothing (`[DONE]`). */
const jsonData = (data: unknown): unknown => (typeof data === 'string' ? undefined : data);

export function createStreamTranslator(from: Dialect, to: Dialect, ctx: ResponseContext): StreamTranslator {
  const inner = from === to ? createPassthrough(from, ctx) : createTranslation(from, to, ctx);
  // The first and last events forwarded as they came (before the usage-bearing one): what a
  // failure event continues. Kept as the objects they are, never read back from the wire.
  let first: unknown;
  let last: unknown;
  let forwarded = 0;
  let billed = false;
  const noted = (events: OutputEvent[]): OutputEvent[] => {
    for (const event of events) {
      billed ||= event.carriesUsage === true;
      if (billed) break;
      if (forwarded++ === 0) first = jsonData(event.data);
      last = jsonData(event.data);
    }
    return events;
  };
  return {
    push: (event) => noted(inner.push(event)),
    end: () => noted(inner.end()),
    usage: () => inner.usage(),
    fail: (failure) => streamFailureEvents(to, failure, first, last),
  };
}
