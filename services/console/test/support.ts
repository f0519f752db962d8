import { randomBytes } from 'node:crypto';
import { createLogger, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import { buildApp, type ConsoleDeps } from '../src/app.ts';
import { Hmac } from '../src/auth/secrets.ts';
import { Sessions } from '../src/auth/sessions.ts';
import { LoginThrottle, type ThrottlePolicy } from '../src/auth/throttle.ts';
import { consoleOrm } from '../src/db/orm.ts';
import { Members } from '../src/members/members.ts';
import { Passkeys } from '../src/auth/passkeys.ts';
import { fakeAlerts, fakeCatalog, type FakeBilling } from './fake-billing.ts';

export const TEST_ORIGIN = 'https://console.test';

/** The console's real schema, migrated, in a schema of its own inside this run's database. */
export async function testOrm(): Promise<MikroORM> {
  const orm = await consoleOrm(inject('databaseUrl'), `console_t${randomBytes(4).toString('hex')}`, 4);
  await runMigrations(orm);
  return orm;
}

export const testHmac = () => new Hmac('test-secret-of-at-least-thirty-two-characters');

/** A clock the test moves by hand. */
export class FakeClock {
  ms: number;

  constructor(start = Date.UTC(2025, 2, 1, 12, 0, 0)) {
    this.ms = start;
  }

  now = (): Date => new Date(this.ms);

  advance(ms: number): void {
    this.ms += ms;
  }
}

/** A member row for tests that need one (no password). */
export async function insertMember(orm: MikroORM, accountId: string, email: string): Promise<string> {
  const id = crypto.randomUUID();
  await orm.em.fork().execute('insert into member (id, account_id, email) values (?, ?, ?)', [id, accountId, email]);
  return id;
}

/**
 * The console app as `main.ts` builds it, on the test's database with billing faked: its
 * sessions and members too, for tests that act on them directly.
 */
export async function testApp(
  orm: MikroORM,
  billing: FakeBilling,
  opts: { throttle?: Partial<ThrottlePolicy>; adminToken?: string; trustProxy?: ConsoleDeps['trustProxy']; maxKeysPerAccount?: number; now?: () => Date; adminOnOwnPort?: boolean; publicOrigin?: string; secureCookies?: boolean } = {},
): Promise<{ app: FastifyInstance; sessions: Sessions; members: Members; deps: ConsoleDeps }> {
  const hmac = testHmac();
  const now = opts.now ?? (() => new Date());
  const sessions = new Sessions(orm, hmac, { idleMs: 30 * 60_000, maxMs: 12 * 3600_000 }, now);
  const members = new Members(orm, hmac, sessions, { inviteMs: 72 * 3600_000, resetMs: 3600_000 }, now);
  const deps: ConsoleDeps = {
    billing: billing.client(),
    alerts: fakeAlerts(billing),
    catalog: fakeCatalog(),
    sessions,
    // A minute's first delay: the app's tests run on the real clock, and a slow machine must not
    // see a short delay run out between two attempts.
    throttle: new LoginThrottle(orm, hmac, { freePerIp: 100, baseDelayMs: 60_000, ...opts.throttle }, now),
    members,
    hmac,
    logger: createLogger('console-test', 'silent'),
    passkeys: new Passkeys(orm, hmac, opts.publicOrigin ?? TEST_ORIGIN, now),
    publicOrigin: opts.publicOrigin ?? TEST_ORIGIN,
    linkOrigin: () => opts.publicOrigin ?? TEST_ORIGIN,
    secureCookies: opts.secureCookies ?? true,
    adminToken: opts.adminToken,
    adminOnOwnPort: opts.adminOnOwnPort ?? false,
    trustProxy: opts.trustProxy ?? false,
    maxKeysPerAccount: opts.maxKeysPerAccount ?? 100,
    isReady: () => true,
    now,
  };
  const app = await buildApp(deps);
  return { app, sessions, members, deps };
}

/**
 * {@link testApp} on an ORM of its own, with `close` ending both: the set-up of a suite, whose
 * `beforeAll` returns `close` so that vitest runs it after the suite.
 */
export async function openTestApp(
  billing: FakeBilling,
  opts: Parameters<typeof testApp>[2] = {},
): Promise<Awaited<ReturnType<typeof testApp>> & { orm: MikroORM; close: () => Promise<void> }> {
  const orm = await testOrm();
  const opened = await testApp(orm, billing, opts);
  return {
    ...opened,
    orm,
    close: async () => {
      await opened.app.close();
      await orm.close();
    },
  };
}
