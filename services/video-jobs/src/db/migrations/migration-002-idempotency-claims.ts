import { Migration } from '@mikro-orm/migrations';

/**
 * The claim table takes the shape every service's claims share (`IDEMPOTENCY_CLAIM_TABLE_SQL` of
 * `@gw/service-kit`): the endpoint the key was used on, and the claim's own state, so a retry is
 * answered from the claim without reading the job. Existing claims are `completed` when their job
 * is past its creation saga, `in_flight` otherwise (nothing is released). Both columns have
 * defaults so the previous release, which inserts neither, still runs on this schema: its claims
 * are in flight until a retry asks their job (`jobState`).
 */
export class Migration002IdempotencyClaims extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "idempotency_claim" add column if not exists "scope" text not null default 'videos/generations'`);
    this.addSql(`alter table "idempotency_claim" add column if not exists "state" text not null default 'in_flight'
      check ("state" in ('in_flight', 'completed'))`);
    this.addSql(`update "idempotency_claim" c set "state" = 'completed'
      from "video_job" j where j."id" = c."job_id" and j."status" not in ('pending', 'abandoned')`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table "idempotency_claim" drop column if exists "state", drop column if exists "scope"');
  }
}
