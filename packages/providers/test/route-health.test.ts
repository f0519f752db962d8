import { describe, expect, it } from 'vitest';
import { ProviderError } from '../src/errors.ts';
import { parseRetryAfter } from '../src/errors.ts';
import { LocalRouteHealth, RouteHealthBoard, type Verdict } from '../src/route-health.ts';
import { FallbackRouter, type Route } from '../src/routing.ts';

const A: Route = { provider: 'a', upstreamModel: 'm', priority: 0, weight: 1 };
const B: Route = { provider: 'b', upstreamModel: 'm', priority: 0, weight: 1 };
const failure = (retryAfterMs?: number) =>
  new ProviderError('upstream_error', 'The upstream provider failed (status 500)', { provider: 'a', retryable: true, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });

function board(now: { t: number }) {
  const b = new RouteHealthBoard({ now: () => now.t });
  const verdicts: Verdict[] = [];
  b.onVerdict = (_route, verdict) => verdicts.push(verdict);
  return { b, verdicts };
}

describe('RouteHealthBoard', () => {
  it('opens only on failures of enough distinct accounts; one account is only a suspect', () => {
    const now = { t: 1_000_000 };
    const { b, verdicts } = board(now);
    for (let i = 0; i < 25; i++) b.record({ route: A, ok: false, account: 'one', latencyMs: 5, error: failure() });
    expect(verdicts.every((v) => v.kind === 'suspect')).toBe(true);
    verdicts.length = 0;
    b.record({ route: A, ok: false, account: 'two', latencyMs: 5, error: failure() });
    b.record({ route: A, ok: false, account: 'three', latencyMs: 5, error: failure() });
    expect(verdicts.at(-1)).toMatchObject({ kind: 'open', reason: 'errors' });
  });

  it('judges the error rate: failures among many successes open nothing', () => {
    const now = { t: 1_000_000 };
    const { b, verdicts } = board(now);
    for (let i = 0; i < 20; i++) b.record({ route: A, ok: true, account: `ok-${i}`, latencyMs: 5 });
    for (let i = 0; i < 6; i++) b.record({ route: A, ok: false, account: `bad-${i}`, latencyMs: 5, error: failure() });
    expect(verdicts).toEqual([]);
    expect(b.stats(A)).toMatchObject({ requests: 26, failed: 6, failingAccounts: 6 });
  });

  it('forgets failures older than the window', () => {
    const now = { t: 1_000_000 };
    const { b, verdicts } = board(now);
    for (const account of ['x', 'y', 'z', 'x']) b.record({ route: A, ok: false, account, latencyMs: 5, error: failure() });
    now.t += 31_000;
    b.record({ route: A, ok: false, account: 'w', latencyMs: 5, error: failure() });
    expect(verdicts).toEqual([]);
    expect(b.stats(A).failed).toBe(1);
  });

  it("rests a route for a Retry-After that several accounts got at once, bounded by the longest rest; one account's only brings a probe", () => {
    const now = { t: 1_000_000 };
    const { b, verdicts } = board(now);
    b.record({ route: A, ok: false, account: 'one', latencyMs: 5, error: failure(7_000) });
    expect(verdicts).toEqual([{ kind: 'suspect', lastError: expect.any(String) }]);
    b.record({ route: A, ok: false, account: 'two', latencyMs: 5, error: failure(7_000) });
    b.record({ route: A, ok: false, account: 'three', latencyMs: 5, error: failure(7_000) });
    expect(verdicts.at(-1)).toEqual({ kind: 'open', reason: 'retry_after', until: now.t + 7_000, lastError: expect.any(String) });
    b.record({ route: A, ok: false, account: 'four', latencyMs: 5, error: failure(3_600_000) });
    expect(verdicts.at(-1)).toMatchObject({ until: now.t + 300_000 });
  });

  it('an applied open state keeps clients off the route; a close starts a new window', () => {
    const now = { t: 1_000_000 };
    const { b } = board(now);
    for (const account of ['x', 'y', 'z', 'x', 'y']) b.record({ route: A, ok: false, account, latencyMs: 5, error: failure() });
    const status = b.status(A);
    b.apply({ ...status, state: 'open', reason: 'errors', since: now.t, until: now.t + 4_000 });
    const router = new FallbackRouter({ health: b });
    expect(router.order([A, B])).toEqual([B]);
    expect(router.unavailable([A])).toMatchObject({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 4 } });
    b.apply({ ...status, state: 'closed', since: now.t + 5_000 });
    expect(b.stats(A).requests).toBe(0);
    expect(router.order([A])).toEqual([A]);
  });

  it('adjusts equal-priority weights by recent errors and latency', () => {
    const now = { t: 1_000_000 };
    const { b } = board(now);
    for (let i = 0; i < 10; i++) {
      b.record({ route: A, ok: true, account: 'x', latencyMs: 100 });
      b.record({ route: B, ok: true, account: 'x', latencyMs: 400 });
    }
    const [fast, slow] = b.weightFactors([A, B]);
    expect(fast).toBe(1);
    expect(slow).toBeCloseTo(0.25);
    // The router follows: with a draw of 0.7 of the total, the slow route's share (0.2) is passed.
    const picks = new FallbackRouter({ health: b, random: () => 0.7 }).order([A, B]);
    expect(picks[0]).toBe(A);
    for (let i = 0; i < 10; i++) b.record({ route: A, ok: false, account: `e${i}`, latencyMs: 100, error: failure() });
    // Factors are reused for a second (they are asked on every request).
    expect(b.weightFactors([A, B])[0]).toBe(1);
    now.t += 1_000;
    expect(b.weightFactors([A, B])[0]).toBeCloseTo(0.25);
  });
});

describe('LocalRouteHealth (media, video: per process)', () => {
  it('with minAccounts, failures in a row of one account rest nothing; of two accounts, the route rests', () => {
    const now = { t: 1_000_000 };
    const health = new LocalRouteHealth({ failureThreshold: 3, minAccounts: 2, coolDownMs: 30_000, now: () => now.t });
    for (let i = 0; i < 25; i++) health.record({ route: A, ok: false, account: 'one', latencyMs: 5, error: failure() });
    expect(health.usable(A)).toBe(true);
    health.record({ route: A, ok: false, account: 'two', latencyMs: 5, error: failure() });
    expect(health.usable(A)).toBe(false);
    expect(health.retryAfterSeconds([A])).toBe(30);
    now.t += 30_000;
    expect(health.usable(A)).toBe(true);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds, an HTTP date and retry-after-ms', () => {
    expect(parseRetryAfter('2', undefined)).toBe(2_000);
    expect(parseRetryAfter(undefined, '1500')).toBe(1_500);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), undefined, 4_000)).toBe(6_000);
    expect(parseRetryAfter('soon', undefined)).toBeUndefined();
    expect(parseRetryAfter(undefined, undefined)).toBeUndefined();
  });
});
