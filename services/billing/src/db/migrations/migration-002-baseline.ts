import { Migration } from '@mikro-orm/migrations';

/** The versioned migrations this baseline replaces, as a database migrated before it recorded them. */
const OLD_CHAIN = [
  'Migration002Money',
  'Migration003KeyWindows',
  'Migration004RateInApplyOps',
  'Migration005ReplayBeforeRate',
  'Migration006ApplyBatch',
  'Migration007RateLongestWait',
  'Migration008KeyStateInAuthorize',
  'Migration009FewerStatementsPerHold',
];

/**
 * Billing's schema after migration 001: holds, settlements, per-key limits and their usage
 * windows, usage records, rate windows, operator switches and reconciliation (migrations 002-009
 * squashed before any release). The SQL functions are not here: each lives in its own file under
 * `src/db/functions/` and is applied as a repeatable migration after the versioned ones.
 *
 * A database migrated with the old chain already has all of this: the baseline finds the chain's
 * names in the migrations table and adds nothing (only the hold's `windowed` column and index if
 * the chain stopped at 002), then is recorded as applied like any migration.
 */
export class Migration002Baseline extends Migration {
  override async up(): Promise<void> {
    const recorded = await this.execute(`select "name" from "mikro_orm_migrations"`);
    const old = new Set(recorded.map((r) => String(r['name'])).filter((name) => OLD_CHAIN.includes(name)));
    if (old.has('Migration003KeyWindows')) return;
    if (old.has('Migration002Money')) {
      this.addSql(`alter table "hold" add column "windowed" boolean not null default false`);
      this.addSql(`update "hold" set "windowed" = true where "key_id" is not null`);
      this.addSql(`create index "hold_key_idx" on "hold" ("key_id")`);
      return;
    }
    this.addSql(`alter table "account"
      add column "rate_per_second" integer check ("rate_per_second" > 0),
      add column "rate_per_minute" integer check ("rate_per_minute" > 0),
      add column "time_zone" text not null default 'Asia/Ho_Chi_Minh'`);
    this.addSql(`alter table "api_key" add column "last_used_at" timestamptz`);

    this.addSql(`create table "key_limit" (
      "key_id" uuid not null references "api_key" ("id"),
      "limit_type" text not null check ("limit_type" in ('spending', 'requests', 'tokens')),
      "period" text not null check ("period" in ('daily', 'monthly', 'lifetime')),
      "value" bigint not null check ("value" >= 0),
      primary key ("key_id", "limit_type", "period")
    )`);
    // Usage of a key per calendar window (in the account's time zone); lifetime uses 1970-01-01.
    // `spent` counts open holds at their held amount until they settle (so spending never
    // overshoots); `tokens_reserved` is the worst case of in-flight text requests.
    this.addSql(`create table "key_usage_window" (
      "key_id" uuid not null references "api_key" ("id"),
      "period" text not null check ("period" in ('daily', 'monthly', 'lifetime')),
      "window_start" date not null,
      "spent" bigint not null default 0,
      "requests" bigint not null default 0,
      "tokens" bigint not null default 0,
      "tokens_reserved" bigint not null default 0,
      primary key ("key_id", "period", "window_start")
    )`);
    this.addSql(`create table "hold" (
      "request_id" text primary key,
      "account_id" uuid not null references "account" ("id"),
      "key_id" uuid references "api_key" ("id"),
      "amount" bigint not null check ("amount" >= 0),
      "worst_tokens" bigint not null default 0,
      "unit" text not null check ("unit" in ('million_tokens', 'image', 'second')),
      "price" bigint not null check ("price" >= 0),
      "endpoint" text not null,
      "model" text not null,
      "status" text not null check ("status" in ('open', 'settled', 'released')),
      "charged" bigint check ("charged" >= 0),
      "refunded" bigint not null default 0 check ("refunded" >= 0),
      "balance_after" bigint,
      "day_start" date not null,
      "month_start" date not null,
      "created_at" timestamptz not null,
      "settled_at" timestamptz,
      "windowed" boolean not null default false
    )`);
    this.addSql(`create index "hold_open_idx" on "hold" ("created_at") where "status" = 'open'`);
    this.addSql(`create index "hold_key_idx" on "hold" ("key_id")`);
    this.addSql(`create table "usage_record" (
      "request_id" text primary key references "hold" ("request_id"),
      "account_id" uuid not null references "account" ("id"),
      "key_id" uuid references "api_key" ("id"),
      "model" text not null,
      "endpoint" text not null,
      "input_tokens" bigint not null default 0,
      "output_tokens" bigint not null default 0,
      "total_tokens" bigint not null default 0,
      "images" integer not null default 0,
      "seconds" integer not null default 0,
      "credits" bigint not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index "usage_record_key_idx" on "usage_record" ("key_id", "created_at")`);
    this.addSql(`create index "usage_record_account_idx" on "usage_record" ("account_id", "created_at")`);
    // Rate windows lose nothing that matters on a crash, so the table skips the WAL: no commit
    // waits for a disk flush on this hot path.
    this.addSql(`create unlogged table "rate_window" (
      "account_id" uuid not null,
      "kind" text not null check ("kind" in ('second', 'minute')),
      "window_start" bigint not null,
      "count" integer not null,
      primary key ("account_id", "kind")
    )`);
    this.addSql(`create table "switch" (
      "name" text primary key check ("name" in ('maintenance', 'ai_requests')),
      "on" boolean not null,
      "updated_at" timestamptz not null default now()
    )`);
    this.addSql(`create table "reconciliation" (
      "id" bigserial primary key,
      "key_id" uuid not null references "api_key" ("id"),
      "request_id" text not null unique,
      "marked_at" timestamptz not null,
      "resolved_at" timestamptz,
      "resolution" text
    )`);
    this.addSql(`create index "reconciliation_open_idx" on "reconciliation" ("key_id") where "resolved_at" is null`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "reconciliation", "switch", "rate_window", "usage_record", "hold", "key_usage_window", "key_limit"');
    this.addSql('alter table "api_key" drop column "last_used_at"');
    this.addSql('alter table "account" drop column "rate_per_second", drop column "rate_per_minute", drop column "time_zone"');
  }
}
