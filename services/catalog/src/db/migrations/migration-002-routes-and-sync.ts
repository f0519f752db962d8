import { Migration } from '@mikro-orm/migrations';

/** Upstream routes per model, the limits the gateway applies, and provider sync evidence. */
export class Migration002RoutesAndSync extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "model"
      add column "max_output_tokens" integer not null default 4096 check ("max_output_tokens" > 0),
      add column "image_sizes" text[] not null default '{}',
      add column "video_first_frame" boolean not null default false,
      add column "video_last_frame" boolean not null default false`);
    this.addSql(`create table "model_route" (
      "model_id" text not null references "model" ("id") on delete cascade,
      "provider" text not null,
      "upstream_model" text not null,
      "priority" integer not null default 0,
      "weight" integer not null default 1 check ("weight" > 0),
      primary key ("model_id", "provider", "upstream_model")
    )`);
    this.addSql(`insert into "model_route" ("model_id", "provider", "upstream_model") select "id", "provider", "upstream_model" from "model"`);
    this.addSql(`create table "provider_sync" (
      "provider" text primary key,
      "last_attempt_at" timestamptz not null,
      "last_success_at" timestamptz,
      "served_models" text[] not null default '{}',
      "last_error" text
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "provider_sync", "model_route"');
    this.addSql(`alter table "model" drop column "max_output_tokens", drop column "image_sizes",
      drop column "video_first_frame", drop column "video_last_frame"`);
  }
}
