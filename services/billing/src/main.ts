import { billingV1 } from '@gw/contracts';
import { runGrpcService } from '@gw/service-kit';
import { billingEntities } from './db/entities.ts';
import { billingMigrations } from './db/migrations/index.ts';
import { billingHandler } from './grpc/billing.handler.ts';

await runGrpcService({
  name: 'billing',
  database: { schema: 'billing', entities: billingEntities, migrations: billingMigrations },
  outbox: true,
  register: ({ orm }) => [[billingV1.BillingService, billingHandler(orm)]],
});
