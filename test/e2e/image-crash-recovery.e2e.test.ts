import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingV1, createClient, mediaV1 } from '@gw/contracts';
import type { RunningSystem } from '../../scripts/system.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { balanceOf, waitForListing, seedDemoModels } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { bodyHash } from '../../services/edge-gateway/src/generation/idempotency.ts';

const PRICE = Number(DEMO_MODELS.find((m) => m.id === 'gpt-sim-one-image')!.priceCreditPerUnit);
const FUNDED = 1_000_000;
const mediaClient = (system: RunningSystem) => createClient(mediaV1.MediaService, system.mediaAddr);
const billingClient = (system: RunningSystem) => createClient(billingV1.BillingService, system.billingAddr);

// A gateway that dies in the middle of an image request leaves a job `running` in media and its
// hold (keyed by the job id) open or already charged in billing. Once the job is stale, media
// abandons it and announces it; billing gives the hold back, so the client pays nothing for the
// images it never received, and a retry with the same Idempotency-Key is charged exactly once.
// The dead gateway's steps are replayed here with the same internal calls it makes.
describe('an image request whose gateway died mid-way', () => {
  let system: RunningSystem;
  let media: ReturnType<typeof mediaClient>;
  let billing: ReturnType<typeof billingClient>;

  beforeAll(async () => {
    system = await startTestSystem({
      serviceEnv: { media: { IMAGE_JOB_STALE_MS: '1500', IMAGE_PURGE_INTERVAL_MS: '300', IMAGE_CLAIM_LEASE_MS: '1500', IMAGE_ORPHAN_SWEEP_MS: '200' } },
    });
    await seedDemoModels(system);
    media = mediaClient(system);
    billing = billingClient(system);
  }, 120_000);
  afterAll(async () => {
    media?.close();
    billing?.close();
    await system?.stop();
  });

  /** What the gateway does before it dies: claim the job under the key, hold one image's price, maybe settle it. */
  async function dieAfter(step: 'hold' | 'settle', account: { accountId: string; keyId: string }, key: string): Promise<string> {
    const { jobId } = await media.beginImageJob({
      accountId: account.accountId,
      idempotencyKey: key,
      bodyHash: createHash('sha256').update(key).digest(),
      operation: mediaV1.ImageOperation.GENERATE,
    });
    const money = { requestId: jobId, accountId: account.accountId };
    await billing.authorize({ ...money, keyId: account.keyId, endpoint: 'images/generations', model: 'gpt-sim-one-image', unit: billingV1.BillingUnit.IMAGE, pricePerUnit: BigInt(PRICE), worstUnits: 1n });
    if (step === 'settle') await billing.settle({ ...money, units: 1n });
    return jobId;
  }

  async function balanceBecomes(accountId: string, expected: number): Promise<void> {
    const deadline = Date.now() + 15_000;
    while ((await balanceOf(system, accountId)) !== expected) {
      if (Date.now() > deadline) throw new Error(`balance stayed at ${await balanceOf(system, accountId)}, expected ${expected}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('charged, then the gateway died: the charge is refunded, and a retry with the key is charged once', async () => {
    const account = await fundedAccount(system, FUNDED);
    const key = `crash-${randomUUID()}`;
    await dieAfter('settle', account, key);
    expect(await balanceOf(system, account.accountId)).toBe(FUNDED - PRICE);

    await balanceBecomes(account.accountId, FUNDED); // refunded once the job went stale

    await waitForListing(system, account.apiKey, ['gpt-sim-one-image']);
    const retry = await fetch(`${system.baseUrl}/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ model: 'gpt-sim-one-image', prompt: 'the retry after a crash' }),
    });
    expect(retry.status).toBe(200);
    const body = (await retry.json()) as { data: unknown[]; service: { credit_charged: number; balance_after: number } };
    expect(body.data).toHaveLength(1);
    expect(body.service).toEqual({ credit_charged: PRICE, balance_after: FUNDED - PRICE });
    // Nothing further moves: the refund happened once.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await balanceOf(system, account.accountId)).toBe(FUNDED - PRICE);
  }, 60_000);

  it('held, then the gateway died: the hold is released long before the stale-hold sweeper would', async () => {
    const account = await fundedAccount(system, FUNDED);
    await dieAfter('hold', account, `crash-${randomUUID()}`);
    expect(await balanceOf(system, account.accountId)).toBe(FUNDED - PRICE);
    await balanceBecomes(account.accountId, FUNDED);
  }, 60_000);

  it('media killed with -9 between commit and answer: a retry with the key runs once within a lease, not 409 for 30 minutes', async () => {
    const account = await fundedAccount(system, FUNDED);
    await waitForListing(system, account.apiKey, ['gpt-sim-one-image']);
    const key = `media-crash-${randomUUID()}`;
    const request = { model: 'gpt-sim-one-image', prompt: 'the retry after media died' };
    const post = () =>
      fetch(`${system.baseUrl}/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(request),
      });
    // The gateway's claim commits in media; media dies before the gateway hears the answer.
    await media.beginImageJob({ accountId: account.accountId, idempotencyKey: key, bodyHash: bodyHash(request), operation: mediaV1.ImageOperation.GENERATE });
    const child = system.services.get('media')!.child;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    await system.restartService('media');

    // While the lease lasts the key is in use (409); then the retry runs, once, and is charged once.
    const statuses: number[] = [];
    const deadline = Date.now() + 15_000;
    let done: Response | undefined;
    while (Date.now() < deadline) {
      const res = await post();
      statuses.push(res.status);
      if (res.status !== 409) {
        done = res;
        break;
      }
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(done?.status).toBe(200);
    expect(new Set(statuses.slice(0, -1))).toEqual(statuses.length > 1 ? new Set([409]) : new Set());
    const body = (await done!.json()) as { data: unknown[]; service: { credit_charged: number; balance_after: number } };
    expect(body.data).toHaveLength(1);
    expect(body.service).toEqual({ credit_charged: PRICE, balance_after: FUNDED - PRICE });
    // The same key again: the finished job, not a second run or charge.
    const again = await post();
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string; job_id?: string } }).error).toMatchObject({ code: 'duplicate_request', job_id: expect.stringMatching(/^imgjob_/) });
    expect(await balanceOf(system, account.accountId)).toBe(FUNDED - PRICE);
  }, 60_000);

  it('leaves a ledger whose every balance equals the sum of its entries', async () => {
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });
});
