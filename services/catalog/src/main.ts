import { catalogV1 } from '@gw/contracts';
import { runGrpcService } from '@gw/service-kit';
import { catalogEntities } from './db/entities.ts';
import { catalogMigrations } from './db/migrations/index.ts';
import { catalogHandler } from './grpc/catalog.handler.ts';

await runGrpcService({
  name: 'catalog',
  database: { schema: 'catalog', entities: catalogEntities, migrations: catalogMigrations },
  outbox: true,
  register: ({ orm }) => [[catalogV1.CatalogService, catalogHandler(orm)]],
});
