import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import { FallbackRouter } from '@gw/providers';
import { createOrm, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { videoJobsEntities } from '../src/db/entities.ts';
import { videoJobsMigrations } from '../src/db/migrations/index.ts';
import { JobCreator } from '../src/domain/create-job.ts';
import { createRequest, FakeBilling, manualClock, silent } from './support.ts';

const hash = (text: string) => createHash('sha256').update(text).digest();

describe('migration 002: Idempotency-Key claims of the previous release keep their meaning (real Postgres)', () => {
  const orms: MikroORM[] = [];
  afterAll(async () => {
    for (const orm of orms) await orm.close();
  });
  const open = async (schema: string, migrations = videoJobsMigrations) => {
    const orm = await createOrm({ databaseUrl: inject('databaseUrl'), schema, entities: videoJobsEntities, migrations });
    orms.push(orm);
    await runMigrations(orm);
    return orm;
  };

  it('a claim of a queued job answers its job; one of a pending job is in progress; the previous release can still insert claims', async () => {
    const schema = `video_jobs_t${randomBytes(4).toString('hex')}`;
    const before = await open(schema, videoJobsMigrations.slice(0, 1));
    const clock = manualClock();
    const acct = randomUUID();
    const insertJob = (id: string, status: string) =>
      before.em.fork().execute(
        `insert into video_job (id, account_id, key_id, model, status, duration_seconds, aspect_ratio, price_per_second, routes, next_attempt_at, created_at, updated_at)
         values (?, ?, 'key', 'veo', ?, 4, '16:9', 100, '[]', ?, ?, ?)`,
        [id, acct, status, clock(), clock(), clock()],
      );
    // As the previous release wrote them: no endpoint, no state.
    const claim = (key: string, jobId: string) =>
      before.em.fork().execute(
        `insert into idempotency_claim (account_id, key, body_hash, job_id, created_at, expires_at) values (?, ?, ?, ?, ?, ?)`,
        [acct, key, hash(key), jobId, clock(), new Date(clock().getTime() + 24 * 3600_000)],
      );
    const queued = `vidjob_${randomBytes(16).toString('hex')}`;
    const pending = `vidjob_${randomBytes(16).toString('hex')}`;
    await insertJob(queued, 'queued');
    await insertJob(pending, 'pending');
    await claim('k-queued', queued);
    await claim('k-pending', pending);

    const after = await open(schema);
    const states = await after.em.fork().execute<{ job_id: string; scope: string; state: string }[]>('select job_id, scope, state from idempotency_claim order by key');
    expect(states).toEqual([
      { job_id: pending, scope: 'videos/generations', state: 'in_flight' },
      { job_id: queued, scope: 'videos/generations', state: 'completed' },
    ]);
    // The previous release's insert still works on the new shape.
    const later = `vidjob_${randomBytes(16).toString('hex')}`;
    await insertJob(later, 'queued');
    await claim('k-later', later);

    const billing = new FakeBilling();
    billing.fund(acct, 100_000n);
    const creator = new JobCreator({ orm: after, billing, clock, logger: silent, router: new FallbackRouter() });
    const retry = (key: string) => creator.create(createRequest(acct, { idempotencyKey: key, bodyHash: hash(key) }));
    await expect(retry('k-queued')).rejects.toMatchObject({ code: 'duplicate_request', details: { job_id: queued } });
    const inProgress = (await retry('k-pending').catch((err: unknown) => err)) as GatewayError;
    expect(inProgress).toBeInstanceOf(GatewayError);
    expect([inProgress.code, inProgress.details.job_id]).toEqual(['duplicate_request', undefined]);
    await expect(retry('k-later')).rejects.toMatchObject({ code: 'duplicate_request', details: { job_id: later } });
    expect(billing.balance(acct)).toBe(100_000n);
  });
});
