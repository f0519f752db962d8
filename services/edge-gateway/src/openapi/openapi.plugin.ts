import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { SCHEMAS } from './schemas.ts';

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
        description: 'Text (four protocols), images and video generation, billed in integer credits (1 credit = 1 VND). Every error is `{error:{code,message}}` with a code from the closed set of spec section 7.2.',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (`gwk_...`).' } } },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    hideUntagged: true,
  });
  await app.register(swaggerUi, { routePrefix: `${basePath}/docs`, staticCSP: true });
  app.get(`${basePath}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
}
