import { Migration } from '@mikro-orm/migrations';

/**
 * A second sign-in factor (TOTP): the member's sealed secret, the one being set up, and the
 * period of the last code accepted (no code works twice). Sessions remember when their member
 * last proved who they are (sign-in or re-authentication), for actions that ask again.
 */
export class Migration006Totp extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "member" add column "totp_secret" bytea, add column "totp_pending" bytea, add column "totp_last_counter" bigint`);
    this.addSql(`alter table "session" add column "authenticated_at" timestamptz`);
    this.addSql(`update "session" set "authenticated_at" = "created_at"`);
    this.addSql(`alter table "session" alter column "authenticated_at" set not null`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table "session" drop column if exists "authenticated_at"');
    this.addSql('alter table "member" drop column if exists "totp_secret", drop column if exists "totp_pending", drop column if exists "totp_last_counter"');
  }
}
