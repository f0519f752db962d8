import { Migration } from '@mikro-orm/migrations';

/**
 * The console's own audit trail: changes to members and roles, which live in the console (billing
 * records the rest). Append-only: a trigger refuses updates, deletes and truncation.
 */
export class Migration008Audit extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "audit_event" (
      "id" bigint generated always as identity primary key,
      "account_id" uuid not null,
      "actor" text not null,
      "origin" text not null,
      "action" text not null,
      "details" jsonb not null,
      "created_at" timestamptz not null
    )`);
    this.addSql('create index "audit_event_account_created" on "audit_event" ("account_id", "created_at" desc)');
    this.addSql(`create function audit_event_append_only() returns trigger language plpgsql as $$
      begin raise exception 'audit_event is append-only'; end $$`);
    this.addSql('create trigger "audit_event_no_update_delete" before update or delete on "audit_event" for each row execute function audit_event_append_only()');
    this.addSql('create trigger "audit_event_no_truncate" before truncate on "audit_event" for each statement execute function audit_event_append_only()');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "audit_event"');
    this.addSql('drop function if exists audit_event_append_only()');
  }
}
