import { defineEntity, p } from '@mikro-orm/postgresql';

/**
 * An Idempotency-Key in use: one row per (account, key), enforced by the primary key, pointing at
 * the job it created. Kept 24 hours; freed at once when its job is abandoned without a charge.
 */
const IdempotencyClaimSchema = defineEntity({
  name: 'IdempotencyClaim',
  tableName: 'idempotency_claim',
  properties: {
    accountId: p.text().primary(),
    key: p.text().primary(),
    /** SHA-256 of the request body that first used the key. */
    bodyHash: p.blob(),
    jobId: p.text(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
  },
});
export class IdempotencyClaim extends IdempotencyClaimSchema.class {}
IdempotencyClaimSchema.setClass(IdempotencyClaim);
