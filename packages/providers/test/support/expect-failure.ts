import { expect } from 'vitest';
import { ProviderError } from '../../src/errors.ts';
import type { SseEvent, TextResult } from '../../src/types.ts';

/** The ProviderError a promise rejects with; checks no simulator key leaked into it. */
export async function providerFailure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  const text = `${(err as Error).message} ${String((err as Error).cause)} ${JSON.stringify(err)}`;
  expect(text).not.toMatch(/sim-(openai|anthropic|google|compat)-key/);
  return err as ProviderError;
}

export function jsonBody(result: TextResult): Record<string, unknown> {
  if (result.kind !== 'json') throw new Error('expected a JSON answer');
  return result.body;
}

export function events(result: TextResult): AsyncIterable<SseEvent> {
  if (result.kind !== 'stream') throw new Error('expected a stream');
  return result.events;
}
