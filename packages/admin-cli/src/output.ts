/** `JSON.rawJSON` (Node 22+): a value `JSON.stringify` writes as it is. */
const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON;

/**
 * Prints a command's result: one JSON object with --json, readable lines otherwise. Big integers
 * (credits, prices, limits) are written exactly, as JSON numbers: through `Number` an int64 came
 * out rounded (9223372036854775807 as 9223372036854776000).
 */
export function print(result: Record<string, unknown>, json: boolean): void {
  const text = JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? rawJson(v.toString()) : v), json ? 0 : 2);
  process.stdout.write(`${text}\n`);
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
