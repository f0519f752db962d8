import { describe, expect, it } from 'vitest';
import { resetSentence, toGatewayError } from '../src/domain/money.ts';
import { insufficientMessage } from '../src/domain/requests.ts';

describe('refusals that say what to do', () => {
  it('a 402 names the hold needed and the balance; for text, max_tokens as what sets the hold', () => {
    const text = insufficientMessage(1200n, 35n, true);
    expect(text).toMatch(/^This request needs 1200 credits held until it completes, and the balance available is 35 credits\./);
    expect(text).toMatch(/send a smaller max_tokens, or top up/);
    expect(insufficientMessage(60n, 0n, false)).not.toMatch(/max_tokens/);
  });

  it('a key limit says when its window resets, in the account zone and in UTC', () => {
    const now = new Date('2026-11-27T20:30:00Z');
    const reset = { at: new Date('2026-11-27T17:00:00Z'), timeZone: 'Asia/Ho_Chi_Minh', now: new Date('2026-11-27T12:50:00Z') };
    expect(resetSentence('daily', reset)).toBe(' The daily window resets at 2026-11-28 00:00 Asia/Ho_Chi_Minh (2026-11-27T17:00:00Z), in 4 h 10 min.');
    expect(resetSentence('lifetime', undefined)).toMatch(/never resets/);
    const err = toGatewayError({ ok: false, code: 'api_key_limit_exceeded', limit_type: 'requests', period: 'monthly' }, { at: new Date('2026-12-01T00:00:00Z'), timeZone: 'UTC', now });
    expect(err.message).toBe('This API key reached its monthly requests limit. The monthly window resets at 2026-12-01 00:00 UTC (2026-12-01T00:00:00Z), in 3 days.');
    expect(err.details).toEqual({ limit_type: 'requests', period: 'monthly' });
  });
});
