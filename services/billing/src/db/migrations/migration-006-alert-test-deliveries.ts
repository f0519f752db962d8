import { Migration } from '@mikro-orm/migrations';

/** A test delivery (`alert.test`) an operator or owner sends to check an alert's endpoint. */
export class Migration006AlertTestDeliveries extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "alert_event" drop constraint if exists "alert_event_type_check"`);
    this.addSql(`alter table "alert_event" add constraint "alert_event_type_check"
      check ("type" in ('alert.low_balance', 'alert.budget_threshold', 'alert.test'))`);
  }

  override async down(): Promise<void> {
    this.addSql(`delete from "alert_event" where "type" = 'alert.test'`);
    this.addSql(`alter table "alert_event" drop constraint if exists "alert_event_type_check"`);
    this.addSql(`alter table "alert_event" add constraint "alert_event_type_check"
      check ("type" in ('alert.low_balance', 'alert.budget_threshold'))`);
  }
}
