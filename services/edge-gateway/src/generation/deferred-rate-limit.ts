import type { FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';

/**
 * The hot path's account rate limit. Text routes skip the separate rate-limit call and let
 * billing's Authorize count the request first (one round trip instead of two). The order of
 * checks stays what clients observe: when a step before Authorize fails (switches, validation,
 * model resolution), the rate limit is consulted before that failure is reported, so a limited
 * client gets 429 whatever else is wrong with its request.
 */
export async function beforeAuthorize<T>(deps: GatewayDeps, request: FastifyRequest, steps: () => T | Promise<T>): Promise<T> {
  try {
    return await steps();
  } catch (err) {
    await consultDeferredRateLimit(deps, request);
    throw err;
  }
}

/**
 * Counts a request of a route that defers its rate limit and throws `rate_limit_exceeded` when it
 * is over: for a request failing before Authorize, in the handler or before it (an unreadable
 * body is refused by the HTTP layer before any handler runs). Other requests pass untouched.
 */
export async function consultDeferredRateLimit(deps: GatewayDeps, request: FastifyRequest): Promise<void> {
  if (request.routeOptions.config.deferRateLimit !== true || !request.apiKey) return;
  await deps.billing.checkRateLimit({ accountId: request.apiKey.accountId });
}
