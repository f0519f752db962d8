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

/**
 * How deep JSON may nest. Every request is walked recursively (validation, translation, the hold's
 * size estimate), and a deep enough body overflows the stack: 20,000 levels fit in 80 KB. Real
 * requests (tool schemas included) nest a few dozen levels at most.
 */
export const MAX_JSON_DEPTH = 256;

/** Error code of a body refused for its depth (`invalid_request` in the error handler). */
export const TOO_DEEP = 'GW_JSON_TOO_DEEP';

function isEscaped(text: string, quote: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Objects and arrays in JSON text, counting up to `limit + 1` (then it stops), and how deep they
 * nest. Strings are skipped whole (`indexOf`), so brackets inside them do not count and a long
 * base64 string costs one scan. Malformed text may be miscounted; the parser then refuses it.
 */
export function jsonShape(text: string, limit: number): { containers: number; depth: number } {
  let containers = 0;
  let depth = 0;
  let open = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = i;
      do end = text.indexOf('"', end + 1);
      while (end !== -1 && isEscaped(text, end));
      if (end === -1) break;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (++open > depth) depth = open;
      if (++containers > limit) break;
    } else if (c === 0x7d || c === 0x5d) {
      open--;
    }
  }
  return { containers, depth };
}

/**
 * `application/json` bodies through Fastify's own parser (same prototype-poisoning rules), refused
 * before parsing when they nest deeper than {@link MAX_JSON_DEPTH}, or, when large, hold more than
 * {@link MAX_JSON_CONTAINERS} objects and arrays.
 */
export function registerJsonBodies(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    const shape = jsonShape(text, MAX_JSON_CONTAINERS);
    if (text.length > COUNT_ABOVE_CHARS && shape.containers > MAX_JSON_CONTAINERS) {
      done(Object.assign(new Error('too many JSON containers'), { statusCode: 400, code: TOO_MANY_CONTAINERS }), undefined);
      return;
    }
    if (shape.depth > MAX_JSON_DEPTH) {
      done(Object.assign(new Error('JSON nested too deep'), { statusCode: 400, code: TOO_DEEP }), undefined);
      return;
    }
    parse(request, text, done);
  });
}
