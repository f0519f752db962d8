import { Migration } from '@mikro-orm/migrations';

/**
 * Model aliases (other public ids of one model) and the model's creation time, which the
 * listing shows as the SDKs' `created` / `created_at`. Models that exist already take their last
 * change as their creation time: the closest the catalog knows.
 */
export class Migration003Aliases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "model" add column "created_at" timestamptz`);
    this.addSql(`update "model" set "created_at" = "updated_at"`);
    this.addSql(`alter table "model" alter column "created_at" set not null, alter column "created_at" set default now()`);
    this.addSql(`create table "model_alias" (
      "alias" text primary key,
      "model_id" text not null references "model" ("id") on delete cascade,
      "created_at" timestamptz not null default now()
    )`);
    this.addSql(`create index "model_alias_model_id" on "model_alias" ("model_id")`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "model_alias"');
    this.addSql('alter table "model" drop column "created_at"');
  }
}
