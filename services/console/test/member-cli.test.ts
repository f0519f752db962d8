import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { FakeBilling } from './fake-billing.ts';
import { openTestApp } from './support.ts';

const ADMIN_TOKEN = 'admin-token-of-at-least-thirty-two-characters';
const CLI = join(import.meta.dirname, '../../../packages/admin-cli/src/main.ts');
const exec = promisify(execFile);

// `pnpm admin member …` as an operator runs it: the CLI process against a console listening on
// loopback (billing faked in memory; the console and its database are real).
describe('pnpm admin member add / list / role / remove', () => {
  let orm: MikroORM;
  let app: FastifyInstance;
  let url: string;
  const billing = new FakeBilling();
  const account = randomUUID();

  beforeAll(async () => {
    billing.addAccount(account, 'Alpha');
    const opened = await openTestApp(billing, { adminToken: ADMIN_TOKEN });
    ({ orm, app } = opened);
    url = await app.listen({ host: '127.0.0.1', port: 0 });
    return opened.close;
  });

  async function admin(...args: string[]): Promise<{ code: number; out: Record<string, unknown> }> {
    const env = { ...process.env, CONSOLE_URL: url, CONSOLE_ADMIN_TOKEN: ADMIN_TOKEN, GW_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-member-')) };
    try {
      const { stdout } = await exec(process.execPath, [CLI, ...args, '--json'], { env });
      return { code: 0, out: JSON.parse(stdout) as Record<string, unknown> };
    } catch (err) {
      const e = err as { code: number; stderr: string };
      return { code: e.code, out: JSON.parse(e.stderr) as Record<string, unknown> };
    }
  }

  it('adds members with roles, lists them, changes a role, removes one; never the last owner', async () => {
    const owner = await admin('member', 'add', '--account', account, '--email', `owner-${randomUUID()}@example.com`, '--role', 'owner');
    expect(owner.code).toBe(0);
    expect(Object.keys(owner.out).sort()).toEqual(['member_id', 'set_password_url']);
    expect(owner.out.set_password_url).toMatch(/^https:\/\/console\.test\/set-password\?token=[A-Za-z0-9_-]{43}$/);
    const dev = await admin('member', 'add', '--account', account, '--email', `dev-${randomUUID()}@example.com`, '--role', 'developer');
    expect((await admin('member', 'add', '--account', account, '--email', 'x@example.com', '--role', 'king')).out).toEqual({
      error: { code: 'usage', message: '--role must be one of owner, admin, developer, viewer' },
    });

    const list = await admin('member', 'list', '--account', account);
    expect((list.out.members as Array<Record<string, unknown>>).map((m) => [m.member_id, m.role])).toEqual([
      [owner.out.member_id, 'owner'],
      [dev.out.member_id, 'developer'],
    ]);
    expect((await admin('member', 'role', '--member', String(dev.out.member_id), '--role', 'viewer')).out).toMatchObject({ member_id: dev.out.member_id, role: 'viewer' });
    const last = await admin('member', 'remove', '--member', String(owner.out.member_id));
    expect([last.code, last.out]).toEqual([1, { error: { code: 'invalid_request', message: 'An account always keeps one owner: make another member owner first.' } }]);
    expect((await admin('member', 'remove', '--member', String(dev.out.member_id))).out).toMatchObject({ removed: true });
    expect(((await admin('member', 'list', '--account', account)).out.members as unknown[]).length).toBe(1);
    // The console's audit trail names the operator the CLI runs as, from where (cli@<host>).
    const rows = await orm.em.fork().execute<Array<{ actor: string; origin: string; action: string }>>(
      'select actor, origin, action from audit_event where account_id = ? order by id',
      [account],
    );
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const row of rows) expect(row).toMatchObject({ actor: `operator:${userInfo().username}`, origin: `cli@${hostname()}` });
    // …and `pnpm admin audit --members` lists the same events, newest first.
    const trail = await admin('audit', '--members', '--account', account);
    expect(trail.code).toBe(0);
    const events = trail.out.events as Array<Record<string, unknown>>;
    expect(events.map((e) => e.action)).toEqual(rows.map((r) => r.action).toReversed());
    expect(events.map((e) => e.action).slice(0, 2)).toEqual(['console.RemoveMember', 'console.SetRole']);
    expect(events[0]).toMatchObject({ actor: `operator:${userInfo().username}`, origin: `cli@${hostname()}`, details: { member_id: dev.out.member_id, role: 'viewer' } });
    expect(typeof events[0]!.at).toBe('string');
    expect(((await admin('audit', '--members', '--account', account, '--limit', '1')).out.events as unknown[]).length).toBe(1);
    expect((await admin('audit', '--members', '--account', 'not-a-uuid')).out).toEqual({
      error: { code: 'invalid_request', message: 'Send {"account_id", "limit"?} as JSON; account_id is a uuid, limit 1-1000 (default 200).' },
    });
    expect((await admin('audit', '--members', '--account', 'none')).code).toBe(2);
  }, 90_000);
});
