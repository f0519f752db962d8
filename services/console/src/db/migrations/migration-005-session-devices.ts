import { Migration } from '@mikro-orm/migrations';

/** What a member is shown of each of their sessions, to tell them apart and end the ones they do not know. */
export class Migration005SessionDevices extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "session" add column "user_agent" text check (length("user_agent") <= 200), add column "network" text check (length("network") <= 64)`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table "session" drop column if exists "user_agent", drop column if exists "network"');
  }
}
