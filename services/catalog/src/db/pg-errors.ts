/** Postgres SQLSTATE 23505: a unique constraint refused a duplicate. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; name?: unknown };
  return e.code === '23505' || e.name === 'UniqueConstraintViolationException';
}
