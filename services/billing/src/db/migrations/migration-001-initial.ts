import { Migration } from '@mikro-orm/migrations';

/** Accounts, wallets, the ledger and API keys. Reviewed SQL; the schema itself is made by the runner. */
export class Migration001Initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "account" (
      "id" uuid primary key,
      "name" text not null,
      "created_at" timestamptz not null default now()
    )`);
    this.addSql(`create table "wallet" (
      "account_id" uuid primary key references "account" ("id"),
      "balance" bigint not null default 0 check ("balance" >= 0),
      "updated_at" timestamptz not null default now()
    )`);
    this.addSql(`create table "ledger_entry" (
      "id" bigserial primary key,
      "account_id" uuid not null references "account" ("id"),
      "kind" text not null check ("kind" in ('top_up', 'hold', 'settle', 'release', 'charge', 'refund', 'adjustment')),
      "amount" bigint not null,
      "balance_after" bigint not null check ("balance_after" >= 0),
      "reference" text not null unique,
      "key_id" uuid,
      "created_at" timestamptz not null default now()
    )`);
    this.addSql(`create index "ledger_entry_account_idx" on "ledger_entry" ("account_id", "id")`);
    this.addSql(`create table "api_key" (
      "id" uuid primary key,
      "account_id" uuid not null references "account" ("id"),
      "name" text not null default '',
      "key_hash" bytea not null unique,
      "prefix" text not null,
      "last_four" text not null,
      "created_at" timestamptz not null default now(),
      "expires_at" timestamptz,
      "revoked_at" timestamptz
    )`);
    this.addSql(`create index "api_key_account_idx" on "api_key" ("account_id")`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "api_key", "ledger_entry", "wallet", "account"');
  }
}
