import type { FastifyInstance } from 'fastify';

/**
 * The bounds of a JSON body, beside its size (each route's `bodyLimit`). A body's size alone does
 * not bound what it costs: 32 MiB of `[{},{},…]` is 11 million objects and ~750 MB of heap, where
 * 32 MiB of base64 image is one 32 MB string; a flat array of 130,000 numbers overflowed the stack
 * of a walk that spread it into a function call. Every request is walked (validation, translation,
 * the hold's size estimate), so each bound holds for every body, whatever its size.
 */
export const JSON_BOUNDS = {
  /**
   * How deep objects and arrays may nest: validation and translation walk recursively, and 20,000
   * levels fit in 80 KB. Real requests (tool schemas included) nest a few dozen levels at most.
   */
  depth: 256,
  /** Objects and arrays in all. A long conversation with tools holds tens of thousands. */
  containers: 100_000,
  /** Values of any kind (objects, arrays, strings, numbers, booleans, null; keys not counted). */
  values: 500_000,
  /** Elements of one array, or members of one object: a call spreading them must fit the stack. */
  items: 50_000,
} as const;

export type JsonBound = keyof typeof JSON_BOUNDS;

/** What each bound counts, for the message that names it. */
export const JSON_BOUND_TEXT: Record<JsonBound, string> = {
  depth: `nests JSON deeper than ${JSON_BOUNDS.depth} levels`,
  containers: `holds more than ${JSON_BOUNDS.containers} JSON objects and arrays`,
  values: `holds more than ${JSON_BOUNDS.values} JSON values (objects, arrays, strings, numbers, booleans and nulls)`,
  items: `has an array or object of more than ${JSON_BOUNDS.items} elements or members`,
};

/** Error code of a body past a bound (`invalid_request` in the error handler); `bound` names it. */
export const OUT_OF_BOUNDS = 'GW_JSON_OUT_OF_BOUNDS';

/** Error code of a body refused for a `__proto__` key (prototype poisoning; `invalid_request`). */
export const PROTO_KEY = 'GW_JSON_PROTO_KEY';

function isEscaped(text: string, quote: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
  return backslashes % 2 === 1;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** `{ } [ ] , :` and whitespace end a number or a literal. */
const endsScalar = (c: number) => c === 0x7b || c === 0x7d || c === 0x5b || c === 0x5d || c === 0x2c || c === 0x3a || isSpace(c);

export interface JsonShape {
  containers: number;
  values: number;
  depth: number;
  /** Most elements of one array or members of one object. */
  widest: number;
  /** The first bound found passed; the walk stops there, so the counts are then partial. */
  exceeded?: JsonBound;
}

/**
 * Measures JSON text in one iterative pass, without parsing it: objects and arrays, values of any
 * kind (object keys are not values), nesting depth and the widest container, stopping at the
 * first bound passed. Strings are skipped whole (`indexOf`), so brackets inside them do not count
 * and a long base64 string costs one scan. Malformed text may be miscounted; the parser then
 * refuses it.
 */
export function jsonShape(text: string, bounds: Readonly<Record<JsonBound, number>> = JSON_BOUNDS): JsonShape {
  const shape: JsonShape = { containers: 0, values: 0, depth: 0, widest: 0 };
  /** Items counted so far in each open container, by its depth (index 0: the top level). */
  const items: number[] = [0];
  let open = 0;
  let inScalar = false;
  const value = (): JsonBound | undefined => {
    if (++shape.values > bounds.values) return 'values';
    if (open > 0) {
      const n = ++items[open]!;
      if (n > shape.widest) shape.widest = n;
      if (n > bounds.items) return 'items';
    }
    return undefined;
  };
  for (let i = 0; i < text.length && shape.exceeded === undefined; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      inScalar = false;
      let end = i;
      do end = text.indexOf('"', end + 1);
      while (end !== -1 && isEscaped(text, end));
      if (end === -1) break;
      i = end;
      let next = end + 1;
      while (next < text.length && isSpace(text.charCodeAt(next))) next++;
      if (text.charCodeAt(next) !== 0x3a) shape.exceeded = value(); // a string not followed by `:` is a value, not a key
    } else if (c === 0x7b || c === 0x5b) {
      inScalar = false;
      shape.exceeded = value();
      if (++shape.containers > bounds.containers) shape.exceeded ??= 'containers';
      if (++open > shape.depth) shape.depth = open;
      if (open > bounds.depth) shape.exceeded ??= 'depth';
      items[open] = 0;
    } else if (c === 0x7d || c === 0x5d) {
      inScalar = false;
      if (open > 0) open--;
    } else if (endsScalar(c)) {
      inScalar = false;
    } else if (!inScalar) {
      inScalar = true;
      shape.exceeded = value();
    }
  }
  return shape;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * `application/json` bodies through Fastify's own parser (same prototype-poisoning rules), refused
 * before parsing when they pass one of {@link JSON_BOUNDS}. A body that parser refuses although it
 * is valid JSON holds a `__proto__` key: refused as such, not as "not valid JSON".
 */
export function registerJsonBodies(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    const { exceeded } = jsonShape(text);
    if (exceeded !== undefined) {
      done(Object.assign(new Error(`JSON body past its ${exceeded} bound`), { statusCode: 400, code: OUT_OF_BOUNDS, bound: exceeded }), undefined);
      return;
    }
    parse(request, text, (err, parsed) => {
      if ((err as { code?: string } | null)?.code === 'FST_ERR_CTP_INVALID_JSON_BODY' && isJson(text)) {
        done(Object.assign(new Error('JSON body with a __proto__ key'), { statusCode: 400, code: PROTO_KEY }), undefined);
        return;
      }
      done(err, parsed);
    });
  });
}
