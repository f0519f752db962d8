import { randomUUID } from 'node:crypto';
import { context } from '@opentelemetry/api';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { authenticate } from './auth/authenticate.ts';
import type { KeyRecord } from './auth/key-cache.ts';
import { consultDeferredRateLimit } from './generation/deferred-rate-limit.ts';
import { meterBody } from './http/body-budget.ts';
import { exposeRepeatedHeaders } from './http/headers.ts';
import { registerJsonBodies } from './http/json-body.ts';
import { DEFAULT_HTTP_TIMEOUTS, serverTimeoutOptions } from './http/timeouts.ts';
import { clientErrorHandler, frameworkErrors, registerErrorHandling } from './plugins/error-handler.ts';
import { registerTelemetry } from './plugins/telemetry.ts';
import { registerOpenApi } from './openapi/openapi.plugin.ts';
import { modelsRoutes } from './protocols/models.route.ts';
import { imagesRoutes } from './protocols/images.routes.ts';
import { textRoutes } from './protocols/text.routes.ts';
import { videosRoutes } from './protocols/videos.routes.ts';
import type { GatewayDeps } from './deps.ts';

export type { GatewayDeps } from './deps.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route checks the account rate limit itself, in billing's Authorize call. */
    deferRateLimit?: boolean;
    /** A messages-protocol route: every answer, errors included, also carries `request-id`. */
    messagesProtocol?: boolean;
    /** A generation route: the operator switches pause it (step 3 of the order of checks). */
    generation?: boolean;
    /** The route's own words for a body too large or not JSON (the rule broken, the form to send). */
    bodyHelp?: { tooLarge?: string; notJson?: string };
  }
  interface FastifyRequest {
    /** The authenticated key; set by the auth hook on every route below the base path. */
    apiKey: KeyRecord;
    /** The model a generation request resolved to ('' before, or on other routes). */
    resolvedModel: string;
    /** The client's own well-formed `x-request-id`, recorded beside ours ('' when none was sent). */
    clientRequestId: string;
  }
}

/** Largest JSON body accepted by default; media and text routes raise it for their base64 images. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** Builds the public HTTP app. `main.ts` owns listening, telemetry and shutdown. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now;
  const timeouts = { ...DEFAULT_HTTP_TIMEOUTS, ...deps.httpTimeouts };
  const app = Fastify({
    // Every phase of a request is bounded in time: headers, body (also when it stops arriving), keep-alive.
    ...serverTimeoutOptions(timeouts),
    trustProxy: deps.trustProxy ?? false,
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    requestIdHeader: false,
    // Always our own id: it is the request's id in billing (hold, ledger, usage record), and a
    // client could send the same id twice. A client's own id is kept beside it (clientRequestId).
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    // What the HTTP layer or the router cannot read leaves in the spec's error shape too.
    clientErrorHandler,
    frameworkErrors,
  });
  app.decorateRequest('apiKey', null as unknown as KeyRecord);
  app.decorateRequest('resolvedModel', '');
  app.decorateRequest('clientRequestId', '');
  registerTelemetry(app);
  // The checks before the body (steps 2 and 3) still decide when the body cannot be read.
  registerErrorHandling(app, DEFAULT_BODY_LIMIT, async (request) => {
    await consultDeferredRateLimit(deps, request);
    if (request.routeOptions.config.generation === true) deps.switches.assertGenerationAllowed();
  });
  registerJsonBodies(app);

  app.addHook('onRequest', async (request, reply) => {
    const given = request.headers['x-request-id'];
    if (typeof given === 'string' && REQUEST_ID.test(given)) request.clientRequestId = given;
    reply.header('x-request-id', request.id);
    // The Anthropic SDK reads its request id from `request-id`; set before auth and body parsing can fail.
    if (request.routeOptions.config.messagesProtocol === true) reply.header('request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        account: request.apiKey?.accountId,
        ...(request.clientRequestId === '' ? {} : { clientRequestId: request.clientRequestId }),
      },
      'request',
    );
  });

  await registerOpenApi(app, deps.basePath);

  // Liveness and readiness sit outside the authenticated API.
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    deps.isReady() ? { status: 'ready' } : reply.code(503).send({ status: 'not ready' }),
  );

  await app.register(
    async (api) => {
      // Route schemas document the API (OpenAPI); handlers validate in the order of checks of
      // DECISIONS.md themselves, and answers pass through as they are (protocols carry fields
      // the schemas do not name).
      api.setValidatorCompiler(() => () => true);
      api.setSerializerCompiler(() => (data) => JSON.stringify(data));
      // Order of checks (DECISIONS.md): auth, then the account rate limit, before anything else.
      // Text generation routes defer the rate limit into billing's Authorize (see deferred-rate-limit.ts).
      // Then the body is read, its bytes reserved as they arrive (see meterBody).
      api.addHook('onRequest', (request) =>
        context.with(request.otel, async () => {
          request.apiKey = await authenticate(request, deps.keys, now());
          if (request.routeOptions.config.deferRateLimit !== true) await deps.billing.checkRateLimit({ accountId: request.apiKey.accountId });
          exposeRepeatedHeaders(request);
        }),
      );
      api.addHook('preParsing', async (request, reply, payload) => meterBody(deps.bodyBudget, timeouts.bodyIdleTimeoutMs, request, reply, payload));
      await api.register(modelsRoutes, deps);
      await api.register(textRoutes, deps);
      await api.register(imagesRoutes, deps);
      await api.register(videosRoutes, deps);
    },
    { prefix: deps.basePath },
  );
  return app;
}
