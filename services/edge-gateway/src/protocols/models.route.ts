import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { ROUTE_DOCS } from '../openapi/schemas.ts';

/** GET /models: free; not a generation request, so maintenance does not block it. */
export async function modelsRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  app.get('/models', { schema: ROUTE_DOCS.models }, async () => ({ data: deps.catalogCache.listing() }));
}
