/** A client's value quoted in a message: at most 64 characters of it, then `…` (a 100 KB model name is not echoed). */
export function quoteClientValue(value: unknown, max = 64): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const chars = Array.from(text.slice(0, max * 2 + 2)); // by code point: a cut never splits a surrogate pair
  return JSON.stringify(chars.length > max ? `${chars.slice(0, max).join('')}…` : text);
}
