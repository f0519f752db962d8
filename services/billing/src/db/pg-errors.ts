/** Postgres SQLSTATE 23505: a unique constraint refused a duplicate. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; name?: unknown };
  return e.code === '23505' || e.name === 'UniqueConstraintViolationException';
}

/** Postgres SQLSTATE 22003: a number out of its column's range (a bigint sum past int64). */
export function isOutOfRange(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  return e.code === '22003' || e.cause?.code === '22003';
}
