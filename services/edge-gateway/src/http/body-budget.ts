import { GatewayError } from '@gw/errors';
import type { BytesBudget } from '@gw/service-kit';
import type { FastifyReply, FastifyRequest } from 'fastify';

const MIB = 1024 * 1024;

/**
 * The bytes a request's body will hold: its declared length (capped at its route's bound, past
 * which it is refused as too large anyway), or the route's bound when it is sent in chunks.
 */
export function bodyBytes(request: FastifyRequest): number {
  const bound = request.routeOptions.bodyLimit ?? 0;
  const declared = request.headers['content-length'];
  if (declared !== undefined) {
    const length = Number(declared);
    return Number.isSafeInteger(length) && length >= 0 ? Math.min(length, bound) : bound;
  }
  return request.headers['transfer-encoding'] === undefined ? 0 : bound;
}

/**
 * Reserves the request's body bytes in the replica's budget (per account and in all) until its
 * answer is over, or refuses it before its body is read: `429 rate_limit_exceeded` with
 * `limit_type` `in_flight_bytes`, as a rate limit on that axis (retry after a second). Keeps a
 * client sending many large bodies at once from taking the replica past its memory.
 */
export function reserveBodyBytes(budget: BytesBudget, request: FastifyRequest, reply: FastifyReply): void {
  const bytes = bodyBytes(request);
  if (bytes === 0) return;
  const reserved = budget.reserve(request.apiKey.accountId, bytes);
  if ('full' in reserved) {
    const message =
      reserved.full === 'owner'
        ? `This account already has ${(budget.used(request.apiKey.accountId) / MIB).toFixed(1)} MiB of request bodies in progress on this server, the most it may have at once. Retry when earlier requests finish.`
        : 'This server is holding as many request bodies as it can at once. Retry in a second.';
    throw new GatewayError('rate_limit_exceeded', message, { limit_type: 'in_flight_bytes', retry_after_seconds: 1 });
  }
  // `close` comes once the answer is sent or the client is gone, whichever way the request ends.
  reply.raw.once('close', reserved.release);
}
