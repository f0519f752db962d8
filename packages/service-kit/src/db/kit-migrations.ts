import { Migration } from '@mikro-orm/migrations';

/**
 * The bus tables every service schema has: the transactional outbox (events written in the same
 * transaction as the state change they announce) and the processed-event inbox (a consumer's
 * record of event ids it has handled, so a redelivery changes nothing).
 */
export class Migration000Bus extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "outbox_event" (
      "id" bigserial primary key,
      "subject" text not null,
      "payload" bytea not null,
      "msg_id" text not null unique,
      "created_at" timestamptz not null default now(),
      "published_at" timestamptz
    )`);
    this.addSql(`create index "outbox_event_pending_idx" on "outbox_event" ("id") where "published_at" is null`);
    this.addSql(`create table "processed_event" (
      "event_id" text primary key,
      "consumer" text not null,
      "processed_at" timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "processed_event", "outbox_event"');
  }
}

/** The trace context of the transaction that wrote an event, so its publication joins that trace. */
export class Migration000BusTrace extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "outbox_event" add column "traceparent" text`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table "outbox_event" drop column "traceparent"');
  }
}

/**
 * Committed outbox rows are announced on the channel `outbox_<schema>` (NOTIFY is delivered at
 * commit, and not at all on rollback), so the relay publishes at once instead of at its next poll.
 */
export class Migration000BusNotify extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create function "outbox_notify"() returns trigger language plpgsql as $fn$
      begin
        perform pg_notify('outbox_' || tg_table_schema, '');
        return null;
      end
    $fn$`);
    this.addSql(`create trigger "outbox_event_notify" after insert on "outbox_event"
      for each statement execute function "outbox_notify"()`);
  }

  override async down(): Promise<void> {
    this.addSql('drop trigger if exists "outbox_event_notify" on "outbox_event"');
    this.addSql('drop function if exists "outbox_notify"()');
  }
}

export const kitMigrations = [
  { name: 'Migration000Bus', class: Migration000Bus },
  { name: 'Migration000BusTrace', class: Migration000BusTrace },
  { name: 'Migration000BusNotify', class: Migration000BusNotify },
];
