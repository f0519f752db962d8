import { Migration } from '@mikro-orm/migrations';

/**
 * An Idempotency-Key claim carries a lease (issue: a key whose media service died between commit
 * and answer answered 409 for 30 minutes). A running job's `lease_until` is set when it begins and
 * extended while media runs it; a running job whose lease ended belongs to no live request and is
 * abandoned (its key freed, billing told to give its hold back). Nullable, so adding it rewrites
 * nothing; jobs begun before it keep the 30-minute rule. Indexed like the running-job index.
 */
export class Migration002ClaimLeases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "image_job" add column if not exists "lease_until" timestamptz`);
    this.addSql(`create index if not exists "image_job_running_lease_idx" on "image_job" ("lease_until") where "status" = 'running'`);
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "image_job_running_lease_idx"');
    this.addSql('alter table "image_job" drop column if exists "lease_until"');
  }
}
