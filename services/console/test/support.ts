import { randomBytes } from 'node:crypto';
import { runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { inject } from 'vitest';
import { Hmac } from '../src/auth/secrets.ts';
import { consoleOrm } from '../src/db/orm.ts';

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
