import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sessions } from '../src/auth/sessions.ts';
import { listenOrigin, setPasswordUrl } from '../src/http/origins.ts';
import { Members } from '../src/members/members.ts';
import { FakeClock, testHmac, testOrm } from './support.ts';

const MIN = 60_000;
const PASSPHRASE = 'an unremarkable sentence of words';

describe('set-password links and security notices on real Postgres', () => {
  let orm: MikroORM;
  const clock = new FakeClock();
  let members: Members;
  const account = randomUUID();

  beforeAll(async () => {
    orm = await testOrm();
    const sessions = new Sessions(orm, testHmac(), { idleMs: 30 * MIN, maxMs: 720 * MIN }, clock.now);
    members = new Members(orm, testHmac(), sessions, { inviteMs: 72 * 60 * MIN, resetMs: 60 * MIN }, clock.now);
  });
  afterAll(() => orm?.close());

  it('an invitation works for 72 hours, a reset for one hour', async () => {
    const { memberId } = await members.create(account, `inv-${randomUUID()}@example.com`);
    const invite = await members.issueSetPasswordToken(memberId);
    expect(invite.purpose).toBe('invite');
    expect(invite.expiresAt.getTime() - clock.ms).toBe(72 * 60 * MIN);
    clock.advance(71 * 60 * MIN);
    expect((await members.tokenMember(invite.token))?.id).toBe(memberId);
    await members.setPasswordWithToken(invite.token, PASSPHRASE);

    const reset = await members.issueSetPasswordToken(memberId);
    expect(reset.purpose).toBe('reset');
    expect(reset.expiresAt.getTime() - clock.ms).toBe(60 * MIN);
    clock.advance(59 * MIN);
    expect((await members.tokenMember(reset.token))?.id).toBe(memberId);
    clock.advance(2 * MIN);
    expect(await members.tokenMember(reset.token)).toBeNull();
    await expect(members.setPasswordWithToken(reset.token, 'another unremarkable sentence')).rejects.toThrow(/invalid, used or expired/);
  });

  it('tells the member of every link issued and every password set or changed; reading marks them seen', async () => {
    const { memberId } = await members.create(account, `notes-${randomUUID()}@example.com`);
    const invite = await members.issueSetPasswordToken(memberId);
    clock.advance(MIN);
    await members.setPasswordWithToken(invite.token, PASSPHRASE);
    clock.advance(MIN);
    await members.issueSetPasswordToken(memberId);
    clock.advance(MIN);
    await members.changePassword(memberId, PASSPHRASE, 'a different unremarkable sentence', Buffer.alloc(32));
    expect(await members.unseenNotices(memberId)).toBe(4);
    const notices = await members.readNotices(memberId);
    expect(notices.map((n) => [n.kind, n.seen])).toEqual([
      ['password-changed', false],
      ['reset-link-issued', false],
      ['password-set', false],
      ['invite-link-issued', false],
    ]);
    expect(notices[1]?.text).toContain('If you did not ask for it, tell your account owner');
    expect(await members.unseenNotices(memberId)).toBe(0);
    expect((await members.readNotices(memberId)).every((n) => n.seen)).toBe(true);
    // Read notices are kept half a year, then housekeeping removes them.
    clock.advance(179 * 24 * 60 * MIN);
    await members.sweepNotices();
    expect(await members.readNotices(memberId)).toHaveLength(4);
    clock.advance(2 * 24 * 60 * MIN);
    expect(await members.sweepNotices()).toBeGreaterThanOrEqual(4);
    expect(await members.readNotices(memberId)).toHaveLength(0);
  });
});

describe('link origins', () => {
  it('the configured origin, never a request Host; the listening address when none is configured', () => {
    expect(setPasswordUrl('https://console.example.com', 'a/b+c')).toBe('https://console.example.com/set-password?token=a%2Fb%2Bc');
    expect(listenOrigin('0.0.0.0', 8081)).toBe('http://127.0.0.1:8081');
    expect(listenOrigin('::1', 8081)).toBe('http://[::1]:8081');
    expect(listenOrigin('127.0.0.1', 9000)).toBe('http://127.0.0.1:9000');
  });
});
