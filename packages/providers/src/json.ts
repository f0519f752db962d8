/** Small readers for untrusted JSON (provider answers), so callers never need a cast. */

export type JsonRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The field when it is a string. */
export function stringField(record: JsonRecord, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

/** The field when it is a finite number. */
export function numberField(record: JsonRecord, key: string): number | undefined {
  const value = record[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** The field when it is an object. */
export function recordField(record: JsonRecord, key: string): JsonRecord | undefined {
  const value = record[key];
  return isRecord(value) ? value : undefined;
}

/** The field's object items; undefined when the field is not an array. */
export function recordsField(record: JsonRecord, key: string): JsonRecord[] | undefined {
  const value = record[key];
  return Array.isArray(value) ? value.filter(isRecord) : undefined;
}

/** A copy holding only the listed keys that are present. */
export function pick(record: JsonRecord, keys: readonly string[]): JsonRecord {
  const out: JsonRecord = {};
  for (const key of keys) if (record[key] !== undefined) out[key] = record[key];
  return out;
}

/** A copy without the listed keys. */
export function omit(record: JsonRecord, keys: readonly string[]): JsonRecord {
  const out: JsonRecord = { ...record };
  for (const key of keys) delete out[key];
  return out;
}
