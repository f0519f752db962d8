import { AUDIT_TABLE_DROP_SQL, AUDIT_TABLE_SQL } from '@gw/service-kit';
import { Migration } from '@mikro-orm/migrations';

/**
 * Alerts on an account's wallet, the crossings they detected (each one also its webhook delivery
 * and its NATS event), and the append-only audit trail of administrative changes.
 *
 * - `alert`: the settings (a low-balance threshold, a monthly budget and its percentages, one
 *   webhook endpoint and its secret) and the armed state the ledger trigger (`alert_on_ledger`)
 *   keeps: whether the next fall below the threshold alerts, and the month's spending with the
 *   percentages that already alerted in it. A cleared alert keeps its row (`cleared_at`) so its
 *   delivery log stays readable; it detects nothing more.
 * - `alert_event`: one row per crossing, written by the trigger in the transaction of the ledger
 *   entry that crossed: its JSON body, its webhook delivery state (status, attempts, next attempt,
 *   last error) and whether its NATS event is in the outbox yet.
 * - `audit_event`: who changed what, when, from where; a trigger refuses updates and deletes
 *   (service-kit's audit table, as every service with an audit trail has it).
 */
export class Migration005AlertsAudit extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists "alert" (
      "id" uuid primary key,
      "account_id" uuid not null references "account" ("id"),
      "low_balance" bigint not null default 0 check ("low_balance" >= 0),
      "monthly_budget" bigint not null default 0 check ("monthly_budget" >= 0),
      "budget_thresholds" integer[] not null default '{}',
      "webhook_url" text not null,
      "secret" text not null,
      "low_armed" boolean not null default true,
      "budget_month" date,
      "budget_spent" bigint not null default 0,
      "budget_fired" integer[] not null default '{}',
      "created_at" timestamptz not null default now(),
      "cleared_at" timestamptz
    )`);
    this.addSql(`create index if not exists "alert_account_idx" on "alert" ("account_id") where "cleared_at" is null`);
    this.addSql(`create table if not exists "alert_event" (
      "id" text primary key,
      "alert_id" uuid not null references "alert" ("id"),
      "account_id" uuid not null,
      "type" text not null check ("type" in ('alert.low_balance', 'alert.budget_threshold')),
      "payload" jsonb not null,
      "status" text not null default 'pending' check ("status" in ('pending', 'delivered', 'failed')),
      "attempts" integer not null default 0,
      "next_attempt_at" timestamptz not null,
      "last_error" text,
      "delivered_at" timestamptz,
      "published" boolean not null default false,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index if not exists "alert_event_due_idx" on "alert_event" ("next_attempt_at") where "status" = 'pending'`);
    this.addSql(`create index if not exists "alert_event_unpublished_idx" on "alert_event" ("created_at") where not "published"`);
    this.addSql(`create index if not exists "alert_event_account_idx" on "alert_event" ("account_id", "created_at")`);
    for (const sql of AUDIT_TABLE_SQL) this.addSql(sql);
  }

  override async down(): Promise<void> {
    this.addSql('drop trigger if exists "alert_on_ledger" on "ledger_entry"');
    for (const sql of AUDIT_TABLE_DROP_SQL) this.addSql(sql);
    this.addSql('drop table if exists "alert_event"');
    this.addSql('drop table if exists "alert"');
  }
}
