import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';

/**
 * Every value a request sent for a header, in order, however many times it was sent. Node keeps
 * only the first of some repeated headers (`authorization`) and joins others with ", "
 * (`idempotency-key`): neither shows that a client sent two.
 */
export function headerValues(raw: Pick<IncomingMessage, 'rawHeaders'>, name: string): string[] {
  const values: string[] = [];
  const { rawHeaders } = raw;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === name) values.push(rawHeaders[i + 1]!);
  }
  return values;
}

/** Headers that carry one value: sent twice, the request is refused where the header is read. */
const SINGLE_VALUED = ['idempotency-key'] as const;

/**
 * Shows a single-valued header sent more than once as the list of its values, so that the check
 * reading it refuses the request at its own step of the order of checks (`idempotencyKeyOf`
 * refuses a list) instead of taking Node's joined "a1, a2" for one key.
 */
export function exposeRepeatedHeaders(request: FastifyRequest): void {
  for (const name of SINGLE_VALUED) {
    if (request.headers[name] === undefined) continue;
    const values = headerValues(request.raw, name);
    if (values.length > 1) request.headers[name] = values;
  }
}
