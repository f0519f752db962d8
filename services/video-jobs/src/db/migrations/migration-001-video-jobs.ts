import { Migration } from '@mikro-orm/migrations';

/**
 * Jobs, their inputs until submission, and Idempotency-Key claims. The database enforces what must
 * never break: one claim per (account, key); a completed job has its download window; a failed job
 * has its reason; a last frame only beside a first frame.
 */
export class Migration001VideoJobs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "video_job" (
      "id" text primary key check ("id" ~ '^vidjob_[0-9a-f]{32}$'),
      "account_id" text not null,
      "key_id" text not null,
      "model" text not null,
      "status" text not null check ("status" in ('pending', 'queued', 'running', 'completed', 'failed', 'abandoned')),
      "duration_seconds" integer not null check ("duration_seconds" in (4, 6, 8)),
      "aspect_ratio" text not null check ("aspect_ratio" in ('16:9', '9:16')),
      "price_per_second" bigint not null check ("price_per_second" >= 0),
      "credit_charged" bigint not null default 0 check ("credit_charged" >= 0),
      "credit_refunded" bigint not null default 0 check ("credit_refunded" >= 0),
      "routes" jsonb not null,
      "provider" text,
      "upstream_model" text,
      "provider_job_id" text,
      "content_ref" text,
      "actual_duration_seconds" integer,
      "failure_reason" text check ("failure_reason" in ('provider_failed', 'safety', 'not_found', 'timed_out')),
      "attempts" integer not null default 0,
      "next_attempt_at" timestamptz not null,
      "lease_token" uuid,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null,
      "submitted_at" timestamptz,
      "completed_at" timestamptz,
      "expires_at" timestamptz,
      "failed_at" timestamptz,
      constraint "video_job_completed_window" check (("status" = 'completed') = ("completed_at" is not null and "expires_at" is not null)),
      constraint "video_job_failed_reason" check (("status" = 'failed') = ("failure_reason" is not null)),
      constraint "video_job_submitted_together" check (("provider_job_id" is null) = ("provider" is null))
    )`);
    // The worker's claim query and the recovery sweep each read one small partial index.
    this.addSql(`create index "video_job_due_idx" on "video_job" ("next_attempt_at") where "status" in ('queued', 'running')`);
    this.addSql(`create index "video_job_pending_idx" on "video_job" ("created_at") where "status" = 'pending'`);

    this.addSql(`create table "video_job_input" (
      "job_id" text primary key references "video_job" ("id") on delete cascade,
      "prompt" text not null,
      "image" bytea,
      "image_mime" text check ("image_mime" in ('image/png', 'image/jpeg', 'image/webp')),
      "last_frame" bytea,
      "last_frame_mime" text check ("last_frame_mime" in ('image/png', 'image/jpeg', 'image/webp')),
      constraint "video_job_input_last_frame_needs_image" check ("last_frame" is null or "image" is not null)
    )`);

    this.addSql(`create table "idempotency_claim" (
      "account_id" text not null,
      "key" text not null,
      "body_hash" bytea not null,
      "job_id" text not null references "video_job" ("id"),
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      primary key ("account_id", "key")
    )`);
    this.addSql(`create index "idempotency_claim_job_idx" on "idempotency_claim" ("job_id")`);
    this.addSql(`create index "idempotency_claim_expiry_idx" on "idempotency_claim" ("expires_at")`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "idempotency_claim", "video_job_input", "video_job"');
  }
}
