import { Migration } from '@mikro-orm/migrations';

/**
 * Holds carry leases (issue: orphans waited 30 minutes). A hold names the process that owns it
 * (`lease_owner`: a gateway or video-jobs process); the owner renews one lease for all its holds
 * (`hold_owner`, a row per owner, one write per renewal however many holds it has). The sweeper
 * releases the open holds of an owner whose lease lapsed. Nullable and without a default, so
 * adding the column rewrites nothing; holds without an owner keep the maximum-age rule.
 */
export class Migration004HoldLeases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "hold" add column if not exists "lease_owner" text`);
    this.addSql(`create table if not exists "hold_owner" (
      "owner" text primary key,
      "lease_until" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "hold_owner"');
    this.addSql('alter table "hold" drop column if exists "lease_owner"');
  }
}
