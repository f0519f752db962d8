import { Migration } from '@mikro-orm/migrations';

/** What an account's owners require of every member's sign-in (two-step sign-in). */
export class Migration007AccountSecurity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "account_security" (
      "account_id" uuid primary key,
      "require_totp" boolean not null default false,
      "updated_at" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "account_security"');
  }
}
