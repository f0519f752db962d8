import { CODECS } from './codecs.ts';
import type { Dialect, OutputEvent, ResponseContext, StreamFailure } from './ir.ts';
import { num, rec, str } from './json.ts';

/**
 * The client dialect's error event(s) for a stream that broke after its events were forwarded as
 * they came, `first` and `last` being the first and last of them (none if none went out).
 * Responses events continue the stream: the next sequence number, the response it created.
 */
export function streamFailureEvents(dialect: Dialect, failure: StreamFailure, first?: unknown, last?: unknown): OutputEvent[] {
  const created = rec(rec(first).response);
  // A created response echoes the request's settings under the request's own field names.
  const ctx: ResponseContext = { id: str(created.id) ?? '', model: str(created.model) ?? '', created: num(created.created_at) ?? 0, request: created };
  const sequence = num(rec(last).sequence_number);
  return CODECS[dialect].errorEvents(failure, ctx, sequence === undefined ? 0 : sequence + 1);
}
