import { randomUUID } from 'node:crypto';
import { accessLog } from '@gw/service-kit';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { KeyRecord } from './auth/key-cache.ts';
import { meterBody } from './http/body-budget.ts';
import { registerJsonBodies } from './http/json-body.ts';
import { DEFAULT_HTTP_TIMEOUTS, serverTimeoutOptions } from './http/timeouts.ts';
import { clientErrorHandler, frameworkErrors, registerErrorHandling } from './plugins/error-handler.ts';
import { countPendingRateLimit, registerRouteChecks } from './plugins/route-checks.ts';
import { registerTelemetry } from './plugins/telemetry.ts';
import { registerOpenApi } from './openapi/openapi.plugin.ts';
import { validatorCompiler } from './schemas/problems.ts';
import { modelsRoutes } from './protocols/models.route.ts';
import { imagesRoutes } from './protocols/images.routes.ts';
import { textRoutes } from './protocols/text.routes.ts';
import { videosRoutes } from './protocols/videos.routes.ts';
import type { GatewayDeps } from './deps.ts';

export type { GatewayDeps } from './deps.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A messages-protocol route: every answer, errors included, also carries `request-id`. */
    messagesProtocol?: boolean;
    /** The route's own words for a body too large or not JSON (the rule broken, the form to send). */
    bodyHelp?: { tooLarge?: string; notJson?: string };
  }
  interface FastifyRequest {
    /** The model a generation request resolved to ('' before, or on other routes). */
    resolvedModel: string;
    /** The name the client asked for: the model, or an alias of it ('' before resolving). */
    requestedModel: string;
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
  app.decorateRequest('requestedModel', '');
  app.decorateRequest('clientRequestId', '');
  registerTelemetry(app);
  // A deferred rate limit (step 2) still decides when a later step fails, the body's reading included.
  registerErrorHandling(app, DEFAULT_BODY_LIMIT, (request) => countPendingRateLimit(deps, request));
  registerJsonBodies(app);

  app.addHook('onRequest', async (request, reply) => {
    const given = request.headers['x-request-id'];
    if (typeof given === 'string' && REQUEST_ID.test(given)) request.clientRequestId = given;
    reply.header('x-request-id', request.id);
    // The Anthropic SDK reads its request id from `request-id`; set before auth and body parsing can fail.
    if (request.routeOptions.config.messagesProtocol === true) reply.header('request-id', request.id);
  });
  app.addHook(
    'onResponse',
    accessLog<FastifyRequest, FastifyReply>((request) => ({
      account: request.apiKey?.accountId,
      ...(request.clientRequestId === '' ? {} : { clientRequestId: request.clientRequestId }),
      // Asked by an alias: the model billed and the name the client asked for.
      ...(request.requestedModel === request.resolvedModel ? {} : { model: request.resolvedModel, requested_model: request.requestedModel }),
    })),
  );

  await registerOpenApi(app, deps.basePath);

  // Liveness and readiness sit outside the authenticated API.
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    deps.isReady() ? { status: 'ready' } : reply.code(503).send({ status: 'not ready' }),
  );

  await app.register(
    async (api) => {
      // A route's body schema validates it (step 4 of the order of checks, after the route checks
      // and the body's reading), types it and documents it (OpenAPI). Answers pass through as
      // they are: protocols carry fields the response schemas do not name.
      api.setValidatorCompiler(validatorCompiler);
      api.setSerializerCompiler(() => (data) => JSON.stringify(data));
      // Order of checks (DECISIONS.md): auth, the account rate limit and the operator switches,
      // before anything else, as each route declares them (see route-checks.ts).
      // Then the body is read, its bytes reserved as they arrive (see meterBody).
      registerRouteChecks(api, deps, now);
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
