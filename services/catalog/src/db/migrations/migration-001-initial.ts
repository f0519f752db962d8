import { Migration } from '@mikro-orm/migrations';

/** Models and catalog-wide settings. */
export class Migration001Initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "model" (
      "id" text primary key,
      "kind" text not null check ("kind" in ('TEXT', 'IMAGE', 'VIDEO')),
      "capabilities" text[] not null default '{}',
      "price" bigint check ("price" is null or "price" >= 0),
      "enabled" boolean not null default true,
      "provider" text not null,
      "upstream_model" text not null,
      "updated_at" timestamptz not null default now()
    )`);
    this.addSql(`create table "setting" (
      "name" text primary key,
      "value" jsonb not null,
      "updated_at" timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "setting", "model"');
  }
}
