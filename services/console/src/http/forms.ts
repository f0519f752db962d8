/**
 * Reading submitted form fields with bounds: every field is a string of at most `max` characters
 * (a repeated or oversize field is refused, never truncated into something the user did not send).
 */
export class BadFormError extends Error {
  override name = 'BadFormError';
}

export function formField(body: unknown, name: string, max: number): string {
  if (typeof body !== 'object' || body === null) return '';
  const value = (body as Record<string, unknown>)[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new BadFormError(`field ${name} is not a single value`);
  if (value.length > max) throw new BadFormError(`field ${name} is too long`);
  return value;
}

/** A query-string parameter under the same rules. */
export function queryParam(query: unknown, name: string, max: number): string {
  return formField(query, name, max);
}
