import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientNetwork, LoginThrottle } from '../src/auth/throttle.ts';
import { FakeClock, testHmac, testOrm } from './support.ts';

const MIN = 60_000;

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

describe('login throttling on real Postgres', () => {
  let orm: MikroORM;
  const clock = new FakeClock();
  let throttle: LoginThrottle;
  let n = 0;
  /** A fresh e-mail and IP per test: tests share the table. */
  const fresh = () => {
    n += 1;
    return { email: `user${n}@example.com`, ip: `10.0.0.${n}` };
  };

  beforeAll(async () => {
    orm = await testOrm();
    throttle = new LoginThrottle(orm, testHmac(), { maxPerEmail: 5, maxPerIp: 8, windowMs: 15 * MIN, lockoutMs: 15 * MIN }, clock.now);
  });
  afterAll(() => orm?.close());

  it('locks an e-mail address after 5 failures, for that address only, with the time left', async () => {
    const { email, ip } = fresh();
    for (let i = 0; i < 4; i++) {
      await throttle.countAttempt(email, ip);
      expect((await throttle.check(email, ip)).locked).toBe(false);
    }
    await throttle.countAttempt(email, ip);
    const verdict = await throttle.check(email.toUpperCase(), fresh().ip); // any IP, any letter case
    expect(verdict).toEqual({ locked: true, retryAfterSeconds: 15 * 60 });
    expect((await throttle.check(fresh().email, ip)).locked).toBe(false); // the IP has budget left
    clock.advance(15 * MIN);
    expect((await throttle.check(email, ip)).locked).toBe(false); // the lock ends
  });

  it('locks an IP after 8 failures spread over many addresses', async () => {
    const { ip } = fresh();
    for (let i = 0; i < 8; i++) await throttle.countAttempt(fresh().email, ip);
    const verdict = await throttle.check(fresh().email, ip);
    expect(verdict.locked).toBe(true);
  });

  it('counts an IPv6 client by its /64: eight addresses of one /64 are one client', async () => {
    n += 1;
    const net = `2001:db8:${n.toString(16)}:2`;
    for (let i = 1; i <= 8; i++) await throttle.countAttempt(fresh().email, `${net}::${i.toString(16)}`);
    expect((await throttle.check(fresh().email, `${net}:ffff:ffff:ffff:ffff`)).locked).toBe(true);
    expect((await throttle.check(fresh().email, `2001:db8:${n.toString(16)}:3::1`)).locked).toBe(false); // the next /64
  });

  it('a success clears the address\'s count but not the IP\'s', async () => {
    const { email, ip } = fresh();
    for (let i = 0; i < 4; i++) await throttle.countAttempt(email, ip);
    await throttle.countAttempt(email, ip); // the attempt that succeeds, counted before its check
    await throttle.recordSuccess(email, ip);
    for (let i = 0; i < 3; i++) await throttle.countAttempt(email, ip);
    expect((await throttle.check(email, ip)).locked).toBe(false); // 3 since the success, 7 from the IP
    await throttle.countAttempt(fresh().email, ip); // the IP's 8th: it counted all along
    expect((await throttle.check(fresh().email, ip)).locked).toBe(true);
  });

  it('attempts sent at once are each counted before any is judged: no more than the limit pass', async () => {
    const { email, ip } = fresh();
    // From as many IPs, so that only the e-mail's limit judges (one IP's limit of 8 would refuse
    // some of the e-mail's first five when they reach the two counters in different orders).
    const admitted = await Promise.all(Array.from({ length: 40 }, (_, i) => throttle.countAttempt(email, `198.51.100.${i + 1}`)));
    expect(admitted.filter(Boolean)).toHaveLength(5);
    expect((await throttle.check(email, ip)).locked).toBe(true);
  });

  it('failures in an old window do not add up with new ones', async () => {
    const { email, ip } = fresh();
    for (let i = 0; i < 4; i++) await throttle.countAttempt(email, ip);
    clock.advance(16 * MIN);
    for (let i = 0; i < 4; i++) await throttle.countAttempt(email, ip);
    expect((await throttle.check(email, ip)).locked).toBe(false);
  });

  it('never stores addresses or IPs in the clear (people type passwords into the e-mail field)', async () => {
    await throttle.countAttempt('my secret password', '192.0.2.7');
    const rows = await orm.em.fork().execute<{ subject: Buffer }[]>('select subject from login_throttle');
    for (const r of rows) {
      expect(r.subject).toHaveLength(32);
      expect(r.subject.toString('utf8')).not.toContain('secret');
    }
  });

  it('housekeeping removes finished windows only', async () => {
    const { email, ip } = fresh();
    await throttle.countAttempt(email, ip);
    clock.advance(16 * MIN);
    expect(await throttle.sweep()).toBeGreaterThan(0);
    const left = await orm.em.fork().execute<{ n: string }[]>('select count(*)::text as n from login_throttle');
    expect(left[0]?.n).toBe('0');
  });
});
