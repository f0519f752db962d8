import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sessions } from '../src/auth/sessions.ts';
import { FakeClock, insertMember, testHmac, testOrm } from './support.ts';

const MIN = 60_000;

describe('server-side sessions on real Postgres', () => {
  let orm: MikroORM;
  const clock = new FakeClock();
  let sessions: Sessions;
  let memberId: string;
  const accountId = randomUUID();

  beforeAll(async () => {
    orm = await testOrm();
    sessions = new Sessions(orm, testHmac(), { idleMs: 30 * MIN, maxMs: 12 * 60 * MIN }, clock.now);
    memberId = await insertMember(orm, accountId, `s-${randomUUID()}@example.com`);
  });
  afterAll(() => orm?.close());

  it('resolves a new session to its member; the table keeps only an HMAC of the cookie value', async () => {
    const { cookieValue, idHash } = await sessions.create(memberId);
    expect(cookieValue).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const resolved = await sessions.resolve(cookieValue);
    expect(resolved?.member).toMatchObject({ memberId, accountId });
    expect(resolved?.idHash.equals(idHash)).toBe(true);
    const stored = await orm.em.fork().execute<{ id_hash: Buffer }[]>('select id_hash from session where member_id = ?', [memberId]);
    expect(stored.some((r) => r.id_hash.equals(idHash))).toBe(true);
    expect(stored.some((r) => r.id_hash.toString('base64url') === cookieValue || r.id_hash.toString('utf8') === cookieValue)).toBe(false);
  });

  it('refuses unknown, empty and oversize cookie values', async () => {
    expect(await sessions.resolve('x'.repeat(43))).toBeNull();
    expect(await sessions.resolve('')).toBeNull();
    expect(await sessions.resolve('x'.repeat(500))).toBeNull();
  });

  it('ends after the idle time without requests, and activity keeps it alive', async () => {
    const { cookieValue } = await sessions.create(memberId);
    clock.advance(20 * MIN);
    expect(await sessions.resolve(cookieValue)).not.toBeNull(); // touches last_seen_at
    clock.advance(20 * MIN);
    expect(await sessions.resolve(cookieValue)).not.toBeNull(); // 20 min since the last request
    clock.advance(31 * MIN);
    expect(await sessions.resolve(cookieValue)).toBeNull();
  });

  it('ends at its absolute lifetime however active it is', async () => {
    const { cookieValue } = await sessions.create(memberId);
    for (let i = 0; i < 24; i++) {
      clock.advance(29 * MIN);
      const alive = await sessions.resolve(cookieValue);
      expect(alive !== null).toBe((i + 1) * 29 * MIN < 12 * 60 * MIN);
    }
  });

  it('logout ends one session; "log out everywhere" ends all, or all but the current one', async () => {
    const a = await sessions.create(memberId);
    const b = await sessions.create(memberId);
    const c = await sessions.create(memberId);
    await sessions.revoke(a.idHash);
    expect(await sessions.resolve(a.cookieValue)).toBeNull();
    expect(await sessions.resolve(b.cookieValue)).not.toBeNull();

    await sessions.revokeAll(memberId, c.idHash);
    expect(await sessions.resolve(b.cookieValue)).toBeNull();
    expect(await sessions.resolve(c.cookieValue)).not.toBeNull();

    await sessions.revokeAll(memberId);
    expect(await sessions.resolve(c.cookieValue)).toBeNull();
  });

  it('does not let a session of one member resolve to another, and sweeps what has ended', async () => {
    const other = await insertMember(orm, randomUUID(), `o-${randomUUID()}@example.com`);
    const mine = await sessions.create(memberId);
    const theirs = await sessions.create(other);
    expect((await sessions.resolve(theirs.cookieValue))?.member.memberId).toBe(other);
    expect((await sessions.resolve(mine.cookieValue))?.member.memberId).toBe(memberId);
    clock.advance(31 * MIN);
    expect(await sessions.sweep()).toBeGreaterThanOrEqual(2);
    const left = await orm.em.fork().execute<{ n: string }[]>('select count(*)::text as n from session');
    expect(left[0]?.n).toBe('0');
  });
});
