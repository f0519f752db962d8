/** Small guards for reading untyped JSON wire bodies without `any`. */

export type Json = Record<string, unknown>;

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value as a record, or an empty one: lets readers chain through optional objects. */
export function rec(value: unknown): Json {
  return isRecord(value) ? value : {};
}

export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function bool(value: unknown): boolean | undefined {
  return typeof value === 'boolean' ? value : undefined;
}

/** Copies `obj` without the keys whose value is `undefined`, so emitted bodies carry no empty keys. */
export function compact(obj: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(obj)) if (value !== undefined) out[key] = value;
  return out;
}

/** Parses tool-call arguments; providers that need an object get `{}` for empty or invalid JSON. */
export function parseArgs(text: string): Json {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : { value };
  } catch {
    return {};
  }
}

/** A string list from a string or an array of strings (e.g. chat `stop`). */
export function strList(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return undefined;
}
