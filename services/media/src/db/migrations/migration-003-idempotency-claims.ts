import { IDEMPOTENCY_CLAIM_DROP_SQL, IDEMPOTENCY_CLAIM_TABLE_SQL } from '@gw/service-kit';
import { Migration } from '@mikro-orm/migrations';

/**
 * Idempotency-Keys move from image_job's key column to the claim table every service shares
 * (`@gw/service-kit`). Every live key is copied with its meaning: a running job's claim in flight
 * (its run's lease still decides when it is an orphan), a finished one's completed until its
 * result expires; abandoned jobs hold no key. Nothing is released. Writes to image_job wait for
 * the copy (a share lock for this transaction), so a claim a running replica commits meanwhile is
 * not missed.
 *
 * Expand only: the key columns and their unique index stay, and media still writes them, because
 * the previous release must run on this schema (deploy/README.md: upgrades and rollbacks) and its
 * replicas claim keys through that index alone.
 */
export class Migration003IdempotencyClaims extends Migration {
  override async up(): Promise<void> {
    this.addSql(`lock table "image_job" in share mode`);
    for (const sql of IDEMPOTENCY_CLAIM_TABLE_SQL) this.addSql(sql);
    this.addSql(`insert into "idempotency_claim" ("account_id", "key", "scope", "body_hash", "job_id", "state", "created_at", "expires_at")
      select "account_id", "idempotency_key", case "operation" when 'edit' then 'images/edits' else 'images/generations' end, "body_hash", "id",
             case "status" when 'running' then 'in_flight' else 'completed' end, "created_at", "expires_at"
        from "image_job" where "idempotency_key" is not null and "status" <> 'abandoned'
      on conflict ("account_id", "key") do nothing`);
  }

  override async down(): Promise<void> {
    for (const sql of IDEMPOTENCY_CLAIM_DROP_SQL) this.addSql(sql);
  }
}
