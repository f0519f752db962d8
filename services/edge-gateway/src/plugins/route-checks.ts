import { context } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticate } from '../auth/authenticate.ts';
import type { KeyRecord } from '../auth/key-cache.ts';
import type { GatewayDeps } from '../deps.ts';
import { exposeRepeatedHeaders } from '../http/headers.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A generation request: the operator switches pause it (step 3 of the order of checks). */
    generation?: boolean;
    /**
     * The route counts the account rate limit (step 2) in billing's Authorize, one round trip
     * instead of two (the text hot path; see `pendingRateLimit`).
     */
    deferRateLimit?: boolean;
  }
  interface FastifyRequest {
    /** The authenticated key; set by the route checks on every route below the base path. */
    apiKey: KeyRecord;
    /**
     * The route defers the account rate limit and the request has not reached billing's
     * Authorize yet: a failure before it counts the rate limit first (`countPendingRateLimit`).
     */
    rateLimitPending: boolean;
  }
}

/**
 * Steps 1 to 3 of the order of checks (DECISIONS.md), for every route below the base path, as
 * each route declares them in its `config`: auth (401), then the account rate limit (429
 * `rate_limit_exceeded`), then, for a generation request (`config.generation`), the operator
 * switches (503 `system_maintenance`, `ai_requests_disabled`). They run before the body is read,
 * so a refused request never has its body read or validated.
 *
 * A route declaring `deferRateLimit` has its rate limit counted by billing's Authorize (the
 * metering hold asks for it, see `metering.ts`); until then the request is marked
 * `rateLimitPending`, and any failure before Authorize counts it first (`countPendingRateLimit`,
 * called by the error handler), so a limited client still gets 429 whatever else is wrong.
 */
export function registerRouteChecks(api: FastifyInstance, deps: Pick<GatewayDeps, 'keys' | 'billing' | 'switches'>, now: () => number): void {
  api.decorateRequest('rateLimitPending', false);
  api.addHook('onRequest', (request) =>
    context.with(request.otel, async () => {
      request.apiKey = await authenticate(request, deps.keys, now());
      const { generation, deferRateLimit } = request.routeOptions.config;
      if (deferRateLimit === true) request.rateLimitPending = true;
      else await deps.billing.checkRateLimit({ accountId: request.apiKey.accountId });
      exposeRepeatedHeaders(request);
      if (generation === true) deps.switches.assertGenerationAllowed();
    }),
  );
}

/**
 * Counts the account rate limit of a request whose route deferred it and that failed before
 * reaching billing's Authorize (throws `rate_limit_exceeded` when it is over). Other requests pass
 * untouched; it counts at most once.
 */
export async function countPendingRateLimit(deps: Pick<GatewayDeps, 'billing'>, request: FastifyRequest): Promise<void> {
  if (!request.rateLimitPending) return;
  request.rateLimitPending = false;
  await deps.billing.checkRateLimit({ accountId: request.apiKey.accountId });
}
