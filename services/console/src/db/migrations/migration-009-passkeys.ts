import { Migration } from '@mikro-orm/migrations';

/**
 * Passkeys (WebAuthn) as a second sign-in factor: each member's registered credentials (public
 * key, signature counter), and the one-time challenges a registration or a sign-in answers,
 * stored only as an HMAC of their handle and spent on first use.
 */
export class Migration009Passkeys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "member_passkey" (
      "id" uuid primary key,
      "member_id" uuid not null references "member" ("id") on delete cascade,
      "credential_id" text not null unique,
      "public_key" bytea not null,
      "counter" bigint not null default 0,
      "transports" text not null default '',
      "name" text not null,
      "created_at" timestamptz not null,
      "last_used_at" timestamptz
    )`);
    this.addSql(`create index "member_passkey_member_idx" on "member_passkey" ("member_id")`);
    this.addSql(`create table "passkey_challenge" (
      "handle_hash" bytea primary key,
      "member_id" uuid not null references "member" ("id") on delete cascade,
      "purpose" text not null check ("purpose" in ('register', 'authenticate')),
      "challenge" text not null,
      "expires_at" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "passkey_challenge"');
    this.addSql('drop table if exists "member_passkey"');
  }
}
