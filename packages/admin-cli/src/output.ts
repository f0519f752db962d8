/** `JSON.rawJSON` (Node 22+): a value `JSON.stringify` writes as it is. */
const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON;

/** How a result reads as text: columns of its lists (others: every field), and cell formats. */
export interface View {
  /** Columns per list field, e.g. `{ models: ['id', 'kind', 'enabled'] }`. */
  columns?: Record<string, string[]>;
  /** Formats a cell of a list column or a field, by its name. */
  format?: Record<string, (value: unknown) => string>;
}

/**
 * Prints a command's result: one JSON object with --json, else readable text: fields as
 * `name: value` lines and lists as aligned tables. Big integers (credits, prices, limits) are
 * written exactly: through `Number` an int64 came out rounded (9223372036854775807 as
 * 9223372036854776000).
 */
export function print(result: Record<string, unknown>, json: boolean, view: View = {}): void {
  process.stdout.write(json ? `${toJson(result)}\n` : render(result, view));
}

export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? rawJson(v.toString()) : v));
}

const label = (name: string) => name.replaceAll('_', ' ');

/** A value in one cell or after `name:`. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'bigint' || typeof value === 'number') return value.toString();
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map((v) => (typeof v === 'object' && v !== null ? toJson(v) : cell(v))).join(', ');
  return toJson(value);
}

/** Rows of objects as an aligned table with a header; `(none)` for an empty list. */
export function table(rows: Array<Record<string, unknown>>, columns?: string[], format: View['format'] = {}): string {
  if (rows.length === 0) return '  (none)\n';
  const cols = columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const text = rows.map((r) => cols.map((c) => (format[c] ? format[c](r[c]) : cell(r[c]))));
  const head = cols.map((c) => label(c).toUpperCase());
  const widths = cols.map((_, i) => Math.max(head[i]!.length, ...text.map((t) => t[i]!.length)));
  const line = (cells: string[]) => `${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`;
  return line(head) + text.map(line).join('');
}

function render(result: Record<string, unknown>, view: View, indent = ''): string {
  let out = '';
  for (const [name, value] of Object.entries(result)) {
    const format = view.format?.[name];
    if (Array.isArray(value) && value.some((v) => typeof v === 'object' && v !== null)) {
      out += `${indent}${label(name)}:\n${table(value as Array<Record<string, unknown>>, view.columns?.[name], view.format)
        .split('\n')
        .filter(Boolean)
        .map((l) => `${indent}  ${l}\n`)
        .join('')}`;
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value) && !format) {
      out += `${indent}${label(name)}:\n${render(value as Record<string, unknown>, view, `${indent}  `)}`;
    } else {
      out += `${indent}${label(name)}: ${format ? format(value) : cell(value)}\n`;
    }
  }
  return out;
}

/** The largest values of the rpc fields options fill: int64 (credits, prices) and int32 (counts, priorities). */
export const INT64_MAX = 2n ** 63n - 1n;
export const INT32_MAX = 2n ** 31n - 1n;

/** A positive integer from a CLI option, at most `max`, or a usage error. */
export function positiveInt(name: string, value: string, max = INT64_MAX): bigint {
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`${name} must be a positive integer`);
  return atMost(name, BigInt(value), max);
}

export function nonNegativeInt(name: string, value: string, max = INT64_MAX): bigint {
  if (!/^(0|[1-9][0-9]*)$/.test(value)) throw new UsageError(`${name} must be a non-negative integer`);
  return atMost(name, BigInt(value), max);
}

function atMost(name: string, n: bigint, max: bigint): bigint {
  if (n > max) throw new UsageError(`${name} must be at most ${max}`);
  return n;
}

export class UsageError extends Error {
  override name = 'UsageError';
}
