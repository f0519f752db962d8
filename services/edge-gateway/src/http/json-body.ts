import type { FastifyInstance } from 'fastify';

/**
 * Objects and arrays a JSON body may hold. A body's size alone does not bound the memory its
 * parse takes: 32 MiB of `[{},{},…]` is 11 million objects and ~750 MB of heap, where 32 MiB of
 * base64 image is one 32 MB string. A long conversation with tools holds tens of thousands.
 */
export const MAX_JSON_CONTAINERS = 100_000;

/** Bodies up to this size are not counted: even all containers, they parse into a few dozen MB. */
const COUNT_ABOVE_CHARS = 1024 * 1024;

/** Error code of a body refused for its containers (`invalid_request` in the error handler). */
export const TOO_MANY_CONTAINERS = 'GW_JSON_TOO_MANY_CONTAINERS';

function isEscaped(text: string, quote: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Objects and arrays in JSON text, counting up to `limit + 1` (then it stops). Strings are skipped
 * whole (`indexOf`), so braces inside them do not count and a long base64 string costs one scan.
 * Malformed text may be miscounted; the parser then refuses it anyway.
 */
export function jsonContainers(text: string, limit: number): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = i;
      do end = text.indexOf('"', end + 1);
      while (end !== -1 && isEscaped(text, end));
      if (end === -1) return count;
      i = end;
    } else if ((c === 0x7b || c === 0x5b) && ++count > limit) {
      return count;
    }
  }
  return count;
}

/**
 * `application/json` bodies through Fastify's own parser (same prototype-poisoning rules), with
 * large bodies refused before parsing when they hold more than {@link MAX_JSON_CONTAINERS}.
 */
export function registerJsonBodies(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.length > COUNT_ABOVE_CHARS && jsonContainers(text, MAX_JSON_CONTAINERS) > MAX_JSON_CONTAINERS) {
      done(Object.assign(new Error('too many JSON containers'), { statusCode: 400, code: TOO_MANY_CONTAINERS }), undefined);
      return;
    }
    parse(request, text, done);
  });
}
