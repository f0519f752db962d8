import { asArray, asObject, asString, isObject } from './json.ts';
import type { JsonObject } from './types.ts';

/** Below this depth every property is filled; deeper, only the required ones (recursive schemas end). */
const FULL_DEPTH = 4;
/** Past this depth nothing more is nested (a schema that requires itself forever). */
const MAX_DEPTH = 12;

/**
 * Deterministic arguments matching a tool's JSON schema: the first enum value, "Paris" for anything
 * that looks like a place, `sim-<name>` for other strings, 1 for numbers, true for booleans.
 * Handles OpenAPI-style upper-case types (Gemini) too.
 */
export function sampleArguments(schema: unknown): JsonObject {
  const value = sampleInstance(schema);
  return isObject(value) ? value : {};
}

/**
 * A deterministic instance of a JSON schema, as a structured-output answer: `const` and `enum`
 * values, `$ref` to `$defs` / `definitions`, the first choice of `anyOf` / `oneOf`, `allOf` merged,
 * every property of an object (only the required ones deep down), `minItems` items, numbers within
 * their bounds, strings of their `minLength` and `format`.
 */
export function sampleInstance(schema: unknown): unknown {
  return sampleValue('', schema, 0, asObject(schema));
}

function resolveRef(s: JsonObject, root: JsonObject): JsonObject {
  const ref = asString(s.$ref);
  if (ref === undefined || !ref.startsWith('#')) return s;
  let node: unknown = root;
  for (const key of ref.slice(1).split('/').filter((k) => k !== '')) node = asObject(node)[key.replaceAll('~1', '/').replaceAll('~0', '~')];
  return asObject(node);
}

function merged(s: JsonObject, root: JsonObject): JsonObject {
  const parts = asArray(s.allOf).map((p) => resolveRef(asObject(p), root));
  if (parts.length === 0) return s;
  const out: JsonObject = { ...s, allOf: undefined };
  for (const part of parts) {
    Object.assign(out, { ...part, properties: { ...asObject(out.properties), ...asObject(part.properties) } });
    out.required = [...asArray(out.required), ...asArray(part.required)];
  }
  return out;
}

function sampleString(name: string, s: JsonObject): string {
  switch (s.format) {
    case 'date-time':
      return '2026-01-01T00:00:00Z';
    case 'date':
      return '2026-01-01';
    case 'time':
      return '00:00:00';
    case 'email':
      return 'sim@example.com';
    case 'uri':
    case 'url':
      return 'https://example.com/sim';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    default: {
      const text = /location|city|place|town|country|address/i.test(name) ? 'Paris' : `sim-${name || 'value'}`;
      const min = typeof s.minLength === 'number' ? s.minLength : 0;
      const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
      return text.padEnd(min, 'x').slice(0, max);
    }
  }
}

function sampleNumber(s: JsonObject, integer: boolean): number {
  const min = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + (integer ? 1 : 0.5) : undefined;
  const max = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - (integer ? 1 : 0.5) : undefined;
  let value = min ?? 1;
  if (max !== undefined && value > max) value = max;
  return integer ? Math.ceil(value) : value;
}

function sampleValue(name: string, schema: unknown, depth: number, root: JsonObject): unknown {
  const s = merged(resolveRef(asObject(schema), root), root);
  if ('const' in s) return s.const;
  const enumValues = asArray(s.enum);
  if (enumValues.length > 0) return enumValues[0];
  const choice = asArray(s.anyOf)[0] ?? asArray(s.oneOf)[0];
  if (choice !== undefined) return sampleValue(name, choice, depth, root);
  const typeField = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  const type = (asString(typeField) ?? (isObject(s.properties) ? 'object' : isObject(s.items) ? 'array' : 'string')).toLowerCase();
  switch (type) {
    case 'object': {
      if (depth >= MAX_DEPTH) return {};
      const required = new Set(asArray(s.required));
      const out: JsonObject = {};
      for (const [key, sub] of Object.entries(asObject(s.properties))) {
        if (depth < FULL_DEPTH || required.has(key)) out[key] = sampleValue(key, sub, depth + 1, root);
      }
      return out;
    }
    case 'array': {
      if (depth >= MAX_DEPTH || s.items === undefined) return [];
      const count = Math.max(typeof s.minItems === 'number' ? s.minItems : 1, 0);
      const limited = typeof s.maxItems === 'number' ? Math.min(count, s.maxItems) : count;
      return Array.from({ length: limited }, () => sampleValue(name, s.items, depth + 1, root));
    }
    case 'integer':
      return sampleNumber(s, true);
    case 'number':
      return sampleNumber(s, false);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return sampleString(name, s);
  }
}
