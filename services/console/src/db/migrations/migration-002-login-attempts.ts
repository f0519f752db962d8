import { Migration } from '@mikro-orm/migrations';

/**
 * Sign-in throttling by decaying scores (growing delays, never a lock) instead of windows and
 * locks. Subjects are HMACs, as before.
 */
export class Migration002LoginAttempts extends Migration {
  override async up(): Promise<void> {
    this.addSql('drop table if exists "login_throttle"');
    this.addSql(`create table "login_attempt" (
      "scope" text not null check ("scope" in ('pair', 'email', 'ip')),
      "subject" bytea not null,
      "score" double precision not null check ("score" >= 0),
      "last_at" timestamptz not null,
      primary key ("scope", "subject")
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "login_attempt"');
    this.addSql(`create table "login_throttle" (
      "scope" text not null check ("scope" in ('email', 'ip')),
      "subject" bytea not null,
      "window_start" timestamptz not null,
      "failures" integer not null check ("failures" >= 0),
      "locked_until" timestamptz,
      primary key ("scope", "subject")
    )`);
  }
}
