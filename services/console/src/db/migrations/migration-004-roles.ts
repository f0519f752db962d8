import { Migration } from '@mikro-orm/migrations';

/**
 * Roles of members (members made before roles had every power, so they become owners), and the
 * member who created each key in the console (billing keeps keys; the console keeps who made
 * them, for the rule that a developer manages only their own keys).
 */
export class Migration004Roles extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "member" add column "role" text not null default 'owner' check ("role" in ('owner', 'admin', 'developer', 'viewer'))`);
    this.addSql(`create table "key_creator" (
      "key_id" uuid primary key,
      "account_id" uuid not null,
      "member_id" uuid not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index "key_creator_member_idx" on "key_creator" ("member_id")`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "key_creator"');
    this.addSql('alter table "member" drop column if exists "role"');
  }
}
