import { asArray, asObject, asString, isObject } from './json.ts';
import type { JsonObject } from './types.ts';

const MAX_DEPTH = 4;

/**
 * Deterministic arguments matching a tool's JSON schema: the first enum value, "Paris" for anything
 * that looks like a place, `sim-<name>` for other strings, 1 for numbers, true for booleans.
 * Handles OpenAPI-style upper-case types (Gemini) too.
 */
export function sampleArguments(schema: unknown): JsonObject {
  const value = sampleValue('', schema, 0);
  return isObject(value) ? value : {};
}

function sampleValue(name: string, schema: unknown, depth: number): unknown {
  const s = asObject(schema);
  const enumValues = asArray(s.enum);
  if (enumValues.length > 0) return enumValues[0];
  const typeField = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  const type = (asString(typeField) ?? (isObject(s.properties) ? 'object' : 'string')).toLowerCase();
  switch (type) {
    case 'object': {
      if (depth >= MAX_DEPTH) return {};
      const out: JsonObject = {};
      for (const [key, sub] of Object.entries(asObject(s.properties))) out[key] = sampleValue(key, sub, depth + 1);
      return out;
    }
    case 'array':
      return depth >= MAX_DEPTH || s.items === undefined ? [] : [sampleValue(name, s.items, depth + 1)];
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    default:
      return /location|city|place|town|country|address/i.test(name) ? 'Paris' : `sim-${name || 'value'}`;
  }
}
