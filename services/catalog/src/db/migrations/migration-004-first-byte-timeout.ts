import { Migration } from '@mikro-orm/migrations';

/** A text model's first-byte deadline per route (ms); 0 = the text service's default. */
export class Migration004FirstByteTimeout extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "model" add column "first_byte_timeout_ms" integer not null default 0 check ("first_byte_timeout_ms" between 0 and 600000)`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "model" drop column if exists "first_byte_timeout_ms"`);
  }
}
