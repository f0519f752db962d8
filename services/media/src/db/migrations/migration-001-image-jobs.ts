import { Migration } from '@mikro-orm/migrations';

/**
 * Image jobs and their kept results. The partial unique index is what makes an Idempotency-Key
 * single-use per account across every media replica: two concurrent claims of the same key
 * cannot both insert a live (not abandoned) job.
 */
export class Migration001ImageJobs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "image_job" (
      "id" text primary key,
      "account_id" text not null,
      "operation" text not null check ("operation" in ('generate', 'edit')),
      "idempotency_key" text,
      "body_hash" bytea,
      "status" text not null check ("status" in ('running', 'succeeded', 'abandoned')),
      "provider" text,
      "credit_charged" bigint check ("credit_charged" >= 0),
      "balance_after" bigint,
      "created_at" timestamptz not null,
      "run_started_at" timestamptz,
      "completed_at" timestamptz,
      "expires_at" timestamptz not null,
      check (("idempotency_key" is null) = ("body_hash" is null))
    )`);
    this.addSql(`create unique index "image_job_live_key_uq" on "image_job" ("account_id", "idempotency_key")
      where "idempotency_key" is not null and "status" <> 'abandoned'`);
    this.addSql(`create index "image_job_expires_idx" on "image_job" ("expires_at")`);
    this.addSql(`create index "image_job_running_idx" on "image_job" ("created_at") where "status" = 'running'`);
    this.addSql(`create table "image_job_image" (
      "job_id" text not null references "image_job" ("id") on delete cascade,
      "position" integer not null check ("position" >= 0),
      "mime_type" text not null check ("mime_type" in ('image/png', 'image/jpeg', 'image/webp')),
      "data" bytea not null,
      primary key ("job_id", "position")
    )`);
    // Images are already compressed: storing them out of line without another compression pass.
    this.addSql(`alter table "image_job_image" alter column "data" set storage external`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "image_job_image", "image_job"');
  }
}
