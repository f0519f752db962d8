import { Migration } from '@mikro-orm/migrations';

/**
 * Set-password links say what they are for (an invitation lives longer than a password reset),
 * and members get security notices (a password changed or set, a link issued), shown in the
 * dashboard: the console sends no mail, so this table is where a member learns of them, and
 * where a mail sender would read them from.
 */
export class Migration003LinkPurposesNotices extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "password_token" add column "purpose" text not null default 'invite' check ("purpose" in ('invite', 'reset'))`);
    this.addSql(`create table "member_notice" (
      "id" bigint generated always as identity primary key,
      "member_id" uuid not null references "member" ("id") on delete cascade,
      "kind" text not null check (length("kind") <= 40),
      "created_at" timestamptz not null,
      "seen_at" timestamptz
    )`);
    this.addSql(`create index "member_notice_member_idx" on "member_notice" ("member_id", "created_at" desc)`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "member_notice"');
    this.addSql('alter table "password_token" drop column if exists "purpose"');
  }
}
