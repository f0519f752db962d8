import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import { createOrm, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { mediaEntities } from '../src/db/entities.ts';
import { mediaMigrations } from '../src/db/migrations/index.ts';
import { beginImageJob, claimRun, getImageJob, IMAGE_JOB_ID, type BeginInput, type JobPolicy } from '../src/domain/image-jobs.ts';

const HOUR = 3600_000;
const LEASE = 60_000;
const POLICY: JobPolicy = { resultTtlMs: 24 * HOUR, staleAfterMs: HOUR / 2, claimLeaseMs: LEASE };
const T0 = new Date('2026-03-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const hash = (body: string) => createHash('sha256').update(body).digest();

async function refusal(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(err)}`);
  return err;
}

describe('migration 003: Idempotency-Keys move from image_job to the claim table, none lost or released (real Postgres)', () => {
  const orms: MikroORM[] = [];
  afterAll(async () => {
    for (const orm of orms) await orm.close();
  });
  const open = async (schema: string, migrations = mediaMigrations) => {
    const orm = await createOrm({ databaseUrl: inject('databaseUrl'), schema, entities: mediaEntities, migrations });
    orms.push(orm);
    await runMigrations(orm);
    return orm;
  };

  it('running, finished and abandoned keyed jobs keep their answers; a copied in-flight claim still ends with its lease', async () => {
    const schema = `media_t${randomBytes(4).toString('hex')}`;
    const before = await open(schema, mediaMigrations.slice(0, 2));
    const acct = randomUUID();
    const keyed = (key: string, operation: BeginInput['operation'] = 'generate'): BeginInput => ({ accountId: acct, idempotencyKey: key, bodyHash: hash(key), operation });
    /** A job as the previous release wrote it: the key on the job row, no claim. */
    const legacyJob = async (key: string, status: string, opts: { operation?: string; expiresAt?: Date; leaseUntil?: Date } = {}) => {
      const id = `imgjob_${randomBytes(16).toString('hex')}`;
      await before.em
        .fork()
        .execute(
          `insert into image_job (id, account_id, operation, idempotency_key, body_hash, status, created_at, expires_at, lease_until, completed_at, credit_charged, balance_after)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            id,
            acct,
            opts.operation ?? 'generate',
            key,
            hash(key),
            status,
            T0,
            opts.expiresAt ?? at(24 * HOUR),
            opts.leaseUntil ?? at(LEASE),
            status === 'succeeded' ? T0 : null,
            status === 'succeeded' ? 1_000 : null,
            status === 'succeeded' ? 9_000 : null,
          ],
        );
      return id;
    };
    const running = await legacyJob('k-running', 'running');
    const succeeded = await legacyJob('k-succeeded', 'succeeded');
    const edit = await legacyJob('k-edit', 'succeeded', { operation: 'edit' });
    await legacyJob('k-abandoned', 'abandoned');

    const after = await open(schema);
    const em = () => after.em.fork();
    const claims = await em().execute<Array<{ key: string; job_id: string; scope: string; state: string }>>(
      'select key, job_id, scope, state from idempotency_claim where account_id = ? order by key',
      [acct],
    );
    expect(claims).toEqual([
      { key: 'k-edit', job_id: edit, scope: 'images/edits', state: 'completed' },
      { key: 'k-running', job_id: running, scope: 'images/generations', state: 'in_flight' },
      { key: 'k-succeeded', job_id: succeeded, scope: 'images/generations', state: 'completed' },
    ]);

    // A finished job answers its id, and its result is still the owner's to fetch.
    expect((await refusal(beginImageJob(em(), keyed('k-succeeded'), POLICY, at(HOUR)))).details).toEqual({ job_id: succeeded });
    expect((await refusal(beginImageJob(em(), keyed('k-edit', 'generate'), POLICY, at(HOUR)))).code).toBe('invalid_request');
    expect((await getImageJob(em(), { jobId: succeeded, accountId: acct }, at(HOUR))).creditCharged).toBe(1_000n);
    // An abandoned one held no key.
    await expect(beginImageJob(em(), keyed('k-abandoned'), POLICY, at(HOUR))).resolves.toMatch(IMAGE_JOB_ID);
    // The running job's claim is in flight while its lease lasts, an orphan after it: the retry runs once.
    expect((await refusal(beginImageJob(em(), keyed('k-running'), POLICY, at(LEASE - 1)))).code).toBe('duplicate_request');
    const retry = await beginImageJob(em(), keyed('k-running'), POLICY, at(LEASE + 1));
    expect(retry).not.toBe(running);
    expect((await refusal(claimRun(em(), { jobId: running, accountId: acct, operation: 'generate' }, at(LEASE + 2)))).code).toBe('not_found');
    const announced = await em().execute<unknown[]>('select 1 from outbox_event where msg_id = ?', [`${running}:abandoned`]);
    expect(announced).toHaveLength(1);
  });

  it('while a replica of the previous release still runs, a key it claimed on image_job alone is not claimed twice', async () => {
    const orm = await open(`media_t${randomBytes(4).toString('hex')}`);
    const acct = randomUUID();
    await orm.em
      .fork()
      .execute(
        `insert into image_job (id, account_id, operation, idempotency_key, body_hash, status, created_at, expires_at, lease_until)
         values (?, ?, 'generate', 'k-old', ?, 'running', ?, ?, ?)`,
        [`imgjob_${randomBytes(16).toString('hex')}`, acct, hash('k-old'), T0, at(24 * HOUR), at(LEASE)],
      );
    const input: BeginInput = { accountId: acct, idempotencyKey: 'k-old', bodyHash: hash('k-old'), operation: 'generate' };
    expect((await refusal(beginImageJob(orm.em.fork(), input, POLICY, at(1_000)))).code).toBe('duplicate_request');
    const claims = await orm.em.fork().execute<unknown[]>('select 1 from idempotency_claim where account_id = ?', [acct]);
    expect(claims).toHaveLength(0);
  });
});
