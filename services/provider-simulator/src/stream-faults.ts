import type { Fault } from './faults.ts';
import { MALFORMED_JSON } from './pipeline.ts';

/** Where a stream breaks under a `stream_error` or `malformed` fault: after some deltas, before usage. */
export interface StreamCut {
  /** Index of the delta before which the stream breaks. */
  at: number;
  kind: 'stream_error' | 'malformed';
}

export function streamCut(fault: Fault | undefined, deltaCount: number): StreamCut | undefined {
  if (fault?.kind === 'stream_error') return { at: Math.min(2, deltaCount), kind: 'stream_error' };
  if (fault?.kind === 'malformed') return { at: Math.min(1, deltaCount), kind: 'malformed' };
  return undefined;
}

/** The `data:` payload of a malformed event: not JSON. */
export const MALFORMED_EVENT_DATA = MALFORMED_JSON;

export const STREAM_ERROR_MESSAGE = 'The stream was interrupted by a simulated upstream error.';
