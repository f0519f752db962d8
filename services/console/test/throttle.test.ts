import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientNetwork, delayFor, LoginThrottle, lockedMessage } from '../src/auth/throttle.ts';
import { FakeClock, testHmac, testOrm } from './support.ts';

const MIN = 60_000;
const POLICY = { freePerPair: 3, freePerEmail: 10, freePerIp: 30, baseDelayMs: 2_000, maxDelayMs: 15 * MIN, halfLifeMs: 60 * MIN };

describe('clientNetwork: what one client is for the per-IP count', () => {
  it('an IPv4 address as it is (also mapped into IPv6), an IPv6 address as its /64', () => {
    expect(['192.0.2.7', '::ffff:192.0.2.7', '2001:db8:1:2::5', '2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd', 'not an address'].map(clientNetwork)).toEqual([
      '192.0.2.7',
      '192.0.2.7',
      '2001:db8:1:2::/64',
      '2001:db8:1:2::/64',
      'not an address',
    ]);
  });
});

describe('delayFor: growing delays', () => {
  it('nothing for the free failures, then 2 s doubling with each failure, capped at the maximum', () => {
    expect([0, 2.9, 3, 3.5, 4, 5, 6, 12, 40].map((score) => delayFor(score, 3, POLICY))).toEqual([0, 0, 0, 2_000, 2_000, 4_000, 8_000, 512_000, 15 * MIN]);
  });

  it('says seconds or minutes', () => {
    expect(lockedMessage({ locked: true, retryAfterSeconds: 8 }, 'failed sign-ins')).toBe('Too many failed sign-ins. Try again in 8 seconds.');
    expect(lockedMessage({ locked: true, retryAfterSeconds: 900 }, 'failed sign-ins')).toBe('Too many failed sign-ins. Try again in 15 minutes.');
  });
});

describe('sign-in throttling on real Postgres', () => {
  let orm: MikroORM;
  const clock = new FakeClock();
  let throttle: LoginThrottle;
  let n = 0;
  /** A fresh e-mail and IP per test: tests share the table. */
  const fresh = () => {
    n += 1;
    return { email: `user${n}@example.com`, ip: `10.0.${Math.floor(n / 250)}.${n % 250}` };
  };

  beforeAll(async () => {
    orm = await testOrm();
    throttle = new LoginThrottle(orm, testHmac(), POLICY, clock.now);
  });
  afterAll(() => orm?.close());

  it('three free failures from one network, then delays that double; never a fixed lock', async () => {
    const { email, ip } = fresh();
    for (let i = 0; i < 3; i++) expect(await throttle.admit(email, { ip })).toEqual({ locked: false, retryAfterSeconds: 0 });
    // The 4th check is free too (3 failures owe nothing); it makes 4, which owe 2 s.
    expect((await throttle.admit(email, { ip })).locked).toBe(false);
    expect(await throttle.admit(email.toUpperCase(), { ip })).toEqual({ locked: true, retryAfterSeconds: 2 });
    clock.advance(2_000);
    expect((await throttle.admit(email, { ip })).locked).toBe(false); // 5 failures owe 4 s
    expect(await throttle.admit(email, { ip })).toEqual({ locked: true, retryAfterSeconds: 4 });
    clock.advance(4_000);
    expect((await throttle.admit(email, { ip })).locked).toBe(false);
    expect((await throttle.admit(email, { ip })).retryAfterSeconds).toBe(8);
  });

  it("an attacker's failures, from one network or from forty, cannot keep the owner out", async () => {
    const { email, ip: ownerIp } = fresh();
    const attacker = fresh().ip;
    // One network hammering: it is held back, the owner is not.
    for (let i = 0; i < 60; i++) {
      const verdict = await throttle.admit(email, { ip: attacker });
      if (verdict.locked) clock.advance(verdict.retryAfterSeconds * 1000);
    }
    expect((await throttle.admit(email, { ip: attacker })).locked).toBe(true);
    expect(await throttle.admit(email, { ip: ownerIp })).toEqual({ locked: false, retryAfterSeconds: 0 });
    await throttle.recordSuccess(email, { ip: ownerIp });
    // Forty networks, three failures each (their free ones), push the address's own score
    // far past its free failures: a network that failed for it is held back by that too...
    for (let i = 0; i < 40; i++) for (let j = 0; j < 3; j++) await throttle.admit(email, { ip: `2001:db8:a:${i.toString(16)}::1` });
    const failedBefore = await throttle.admit(email, { ip: '2001:db8:a:1::9' });
    expect(failedBefore.locked).toBe(true);
    expect(failedBefore.retryAfterSeconds).toBe(15 * 60);
    // ...but the owner's network, which has no failure of its own, has its check at once,
    const owner = await throttle.admit(email, { ip: ownerIp });
    expect(owner).toEqual({ locked: false, retryAfterSeconds: 0 });
    await throttle.recordSuccess(email, { ip: ownerIp });
    // and so has the owner's browser known from an earlier sign-in, on the attacker's own network.
    expect(await throttle.admit(email, { ip: attacker, device: 'owner-browser' })).toEqual({ locked: false, retryAfterSeconds: 0 });
  }, 60_000);

  it('failures decay slowly: waiting a quarter of an hour gives nothing back for free', async () => {
    const { email, ip } = fresh();
    for (let i = 0; i < 10; i++) {
      const verdict = await throttle.admit(email, { ip });
      if (verdict.locked) {
        clock.advance(verdict.retryAfterSeconds * 1000);
        await throttle.admit(email, { ip });
      }
    }
    clock.advance(15 * MIN); // the old 15-minute window would have forgiven everything here
    expect((await throttle.admit(email, { ip })).locked).toBe(false);
    const held = await throttle.admit(email, { ip });
    expect(held.locked).toBe(true);
    expect(held.retryAfterSeconds).toBeGreaterThan(60);
    // After many half-lives the score is gone.
    clock.advance(10 * 60 * MIN);
    for (let i = 0; i < 3; i++) expect((await throttle.admit(email, { ip })).locked).toBe(false);
  });

  it('one network spraying many addresses is held back by its own count (IPv6 by its /64)', async () => {
    n += 1;
    const net = `2001:db8:${n.toString(16)}:2`;
    for (let i = 1; i <= 31; i++) expect((await throttle.admit(fresh().email, { ip: `${net}::${i.toString(16)}` })).locked).toBe(false);
    expect((await throttle.admit(fresh().email, { ip: `${net}:ffff:ffff:ffff:ffff` })).locked).toBe(true);
    expect((await throttle.admit(fresh().email, { ip: `2001:db8:${n.toString(16)}:3::1` })).locked).toBe(false); // the next /64
  });

  it("a success clears its pair's failures but gives the network only its own attempt back", async () => {
    const { email, ip } = fresh();
    for (let i = 0; i < 3; i++) await throttle.admit(email, { ip });
    await throttle.admit(email, { ip }); // the attempt that succeeds, counted before its check
    await throttle.recordSuccess(email, { ip });
    for (let i = 0; i < 4; i++) expect((await throttle.admit(email, { ip })).locked).toBe(false);
    const rows = await orm.em.fork().execute<{ scope: string; score: number }[]>('select scope, score from login_attempt where scope = ? order by score desc limit 1', ['ip']);
    expect(rows[0]?.score).toBeGreaterThanOrEqual(7);
  });

  it('attempts sent at once are judged one after another: a burst gets only the free checks', async () => {
    const { email, ip } = fresh();
    const verdicts = await Promise.all(Array.from({ length: 40 }, () => throttle.admit(email, { ip })));
    expect(verdicts.filter((v) => !v.locked)).toHaveLength(4);
  });

  it('never stores addresses or IPs in the clear (people type passwords into the e-mail field)', async () => {
    await throttle.admit('my secret password', { ip: '192.0.2.7' });
    const rows = await orm.em.fork().execute<{ subject: Buffer }[]>('select subject from login_attempt');
    for (const r of rows) {
      expect(r.subject).toHaveLength(32);
      expect(r.subject.toString('utf8')).not.toContain('secret');
    }
  });

  it('housekeeping removes rows whose score has decayed to nothing, only those', async () => {
    const old = fresh();
    await throttle.admit(old.email, { ip: old.ip });
    clock.advance(20 * 60 * MIN);
    const recent = fresh();
    await throttle.admit(recent.email, { ip: recent.ip });
    expect(await throttle.sweep()).toBeGreaterThan(0);
    const left = await orm.em.fork().execute<{ n: string }[]>('select count(*)::text as n from login_attempt');
    expect(left[0]?.n).toBe('3');
  });
});
