import { Migration } from '@mikro-orm/migrations';

/**
 * Members, sessions, login throttling and set-password tokens. Reviewed SQL; the schema itself is
 * made by the runner. Throttle subjects (e-mail addresses and client IPs) are stored as HMACs:
 * people type passwords into the e-mail field, and failed attempts must not keep those.
 */
export class Migration001Initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "member" (
      "id" uuid primary key,
      "account_id" uuid not null,
      "email" text not null unique check ("email" = lower("email") and length("email") <= 254),
      "password_hash" text,
      "time_zone" text,
      "created_at" timestamptz not null default now(),
      "password_changed_at" timestamptz
    )`);
    this.addSql(`create index "member_account_idx" on "member" ("account_id")`);
    this.addSql(`create table "session" (
      "id_hash" bytea primary key,
      "member_id" uuid not null references "member" ("id") on delete cascade,
      "created_at" timestamptz not null,
      "last_seen_at" timestamptz not null,
      "expires_at" timestamptz not null
    )`);
    this.addSql(`create index "session_member_idx" on "session" ("member_id")`);
    this.addSql(`create index "session_expires_idx" on "session" ("expires_at")`);
    this.addSql(`create table "login_throttle" (
      "scope" text not null check ("scope" in ('email', 'ip')),
      "subject" bytea not null,
      "window_start" timestamptz not null,
      "failures" integer not null check ("failures" >= 0),
      "locked_until" timestamptz,
      primary key ("scope", "subject")
    )`);
    this.addSql(`create table "password_token" (
      "token_hash" bytea primary key,
      "member_id" uuid not null references "member" ("id") on delete cascade,
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "used_at" timestamptz
    )`);
    this.addSql(`create index "password_token_member_idx" on "password_token" ("member_id")`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "password_token", "login_throttle", "session", "member"');
  }
}
