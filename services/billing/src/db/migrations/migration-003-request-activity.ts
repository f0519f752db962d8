import { Migration } from '@mikro-orm/migrations';

/**
 * The account's requests as a log (the dashboard's activity page) and the client's own request id.
 * - `client_request_id`: the `x-request-id` a client sent, kept beside our request id (the hold's
 *   key, which a client must not choose: a reused id would find another request's hold). Nullable
 *   and without a default, so adding it rewrites nothing; written with the hold, for requests that
 *   carry one.
 * - An index by account and time, so a page of the log reads one range, newest first.
 */
export class Migration003RequestActivity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "hold" add column if not exists "client_request_id" text`);
    this.addSql(`create index if not exists "hold_account_idx" on "hold" ("account_id", "created_at" desc, "request_id" desc)`);
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "hold_account_idx"');
    this.addSql('alter table "hold" drop column if exists "client_request_id"');
  }
}
