import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { presentDocument, UI_OPTIONS } from './presentation.ts';
import { documentedRoute, SCHEMAS } from './schemas.ts';

/**
 * The OpenAPI 3.1 document of the public API, generated from the route schemas, served at
 * `<base>/openapi.json` with a docs page at `<base>/docs` (neither needs a key: they describe the
 * API, they are not part of it). Registered before the routes so it sees them all.
 */
export async function registerOpenApi(app: FastifyInstance, basePath: string): Promise<void> {
  for (const s of SCHEMAS) app.addSchema(s);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Generation gateway API',
        version: '1',
        description:
          'Text in four protocols (OpenAI chat completions and responses, Anthropic messages, and a plain chat), images and video generation, with the official OpenAI and Anthropic SDKs. Every request carries `Authorization: Bearer <API key>` (keys begin with `gwk_`). Billed in integer credits (1 credit = 1 VND): answers carry a `service` object with `credit_charged` and `balance_after`. Every error is `{"error":{"code","message"}}` with a code from a closed set (see ErrorBody): retry 5xx answers with backoff, with an `Idempotency-Key` on image and video creation.',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (`gwk_...`).' } } },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    hideUntagged: true,
    transform: ({ schema, url }) => ({ schema: documentedRoute(schema), url }),
    transformObject: (doc) => ('openapiObject' in doc ? presentDocument(doc.openapiObject as Record<string, unknown>, basePath) : doc.swaggerObject),
  });
  await app.register(swaggerUi, { routePrefix: `${basePath}/docs`, ...UI_OPTIONS });
  app.get(`${basePath}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
}
