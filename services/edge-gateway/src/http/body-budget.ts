import { Transform, type Readable } from 'node:stream';
import { GatewayError } from '@gw/errors';
import type { BytesBudget } from '@gw/service-kit';
import type { FastifyReply, FastifyRequest } from 'fastify';

const MIB = 1024 * 1024;

/** True when the request carries a body to read (a length above 0, or chunks). */
function hasBody(request: FastifyRequest): boolean {
  const declared = request.headers['content-length'];
  if (declared !== undefined) return declared !== '0';
  return request.headers['transfer-encoding'] !== undefined;
}

function budgetFull(budget: BytesBudget, account: string, full: 'owner' | 'total'): GatewayError {
  const message =
    full === 'owner'
      ? `This account already has ${(budget.used(account) / MIB).toFixed(1)} MiB of request bodies arriving or in progress on this server, the most it may have at once. Retry when earlier requests finish.`
      : 'This server is holding as many request bodies as it can at once. Retry in a second.';
  return new GatewayError('rate_limit_exceeded', message, { limit_type: 'in_flight_bytes', retry_after_seconds: 1 });
}

/**
 * The request's body as it is read, metered (a `preParsing` hook's stream, after auth and the
 * rate limit):
 *
 * - Each chunk's bytes are reserved in the replica's budget (per account and in all) as they
 *   ARRIVE, and held until the answer is over (the parsed body lives that long). A declared
 *   `Content-Length` reserves nothing: a client declaring 32 MiB and sending nothing holds no byte
 *   of anyone's budget. A chunk that does not fit ends the request with `429 rate_limit_exceeded`,
 *   `limit_type` `in_flight_bytes` (retry after a second).
 * - A body that stops arriving (no byte for `idleTimeoutMs`, from its start or its last chunk) is
 *   cut: `400 invalid_request`, and the connection is closed.
 *
 * Requests without a body pass untouched.
 */
export function meterBody(budget: BytesBudget, idleTimeoutMs: number, request: FastifyRequest, reply: FastifyReply, payload: Readable): Readable {
  if (!hasBody(request)) return payload;
  const account = request.apiKey.accountId;
  // One reservation per request, grown chunk by chunk (given back and taken again for the new
  // total): a request alone in a budget fits whatever its size, as BytesBudget promises.
  let held: { release: () => void } | undefined;
  let arrived = 0;
  const release = () => {
    held?.release();
    held = undefined;
  };
  let timer: NodeJS.Timeout | undefined;
  const fail = (err: GatewayError) => {
    clearTimeout(timer);
    release(); // the rest of the body is not read, and what arrived is dropped
    // The rest of the body is not read: the connection cannot carry another request.
    if (!reply.sent) reply.header('connection', 'close');
    meter.destroy(err);
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const seconds = Math.round(idleTimeoutMs / 100) / 10;
      fail(new GatewayError('invalid_request', `The request body stopped arriving: no byte came for ${seconds} s. Send the whole body without pausing.`));
    }, idleTimeoutMs);
  };
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      release();
      const reserved = budget.reserve(account, arrived + chunk.length);
      if ('full' in reserved) {
        fail(budgetFull(budget, account, reserved.full));
        return;
      }
      held = reserved;
      arrived += chunk.length;
      arm();
      callback(null, chunk);
    },
    flush(callback) {
      clearTimeout(timer);
      callback();
    },
  });
  // `close` comes once the answer is sent or the client is gone, whichever way the request ends.
  reply.raw.once('close', () => {
    clearTimeout(timer);
    release();
  });
  payload.once('error', (err) => meter.destroy(err));
  payload.pipe(meter);
  arm();
  return meter;
}
