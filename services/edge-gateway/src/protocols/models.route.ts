import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { ROUTE_DOCS } from '../openapi/schemas.ts';

/** A request from the Anthropic SDK (or anyone speaking its protocol) gets its listing fields too. */
const anthropic = (request: FastifyRequest) => request.headers['anthropic-version'] !== undefined;

/**
 * GET /models and GET /models/{id}: free; not generation requests, so maintenance does not block
 * them. An id holding `/` is sent encoded (`%2F`), as the SDKs do.
 */
export async function modelsRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  app.get('/models', { schema: ROUTE_DOCS.models }, async (request) => {
    const data = deps.catalogCache.listing(anthropic(request));
    // The Anthropic SDK pages through `has_more` / `first_id` / `last_id`; the listing is one page.
    if (!anthropic(request)) return { data };
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  });
  app.get<{ Params: { id: string } }>('/models/:id', { schema: ROUTE_DOCS['models/:id'] }, async (request) =>
    deps.catalogCache.listed(request.params.id, anthropic(request)),
  );
}
