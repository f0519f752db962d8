import { AUDIT_TABLE_DROP_SQL, AUDIT_TABLE_SQL } from '@gw/service-kit';
import { Migration } from '@mikro-orm/migrations';

/** The append-only audit trail of the catalog's administrative changes (service-kit's audit table). */
export class Migration005Audit extends Migration {
  override async up(): Promise<void> {
    for (const sql of AUDIT_TABLE_SQL) this.addSql(sql);
  }

  override async down(): Promise<void> {
    for (const sql of AUDIT_TABLE_DROP_SQL) this.addSql(sql);
  }
}
