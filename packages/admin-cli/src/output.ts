/** Prints a command's result: one JSON object with --json, readable lines otherwise. */
export function print(result: Record<string, unknown>, json: boolean): void {
  const text = JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), json ? 0 : 2);
  process.stdout.write(`${text}\n`);
}

/** A positive safe integer from a CLI option, or a usage error. */
export function positiveInt(name: string, value: string): bigint {
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`${name} must be a positive integer`);
  return BigInt(value);
}

export function nonNegativeInt(name: string, value: string): bigint {
  if (!/^(0|[1-9][0-9]*)$/.test(value)) throw new UsageError(`${name} must be a non-negative integer`);
  return BigInt(value);
}

export class UsageError extends Error {
  override name = 'UsageError';
}
