/**
 * The simulator's tokenizer: about one token per 4 characters of JSON, at least 1. The same function
 * feeds usage and the token counting endpoints, so counts always agree, and anything added to a request
 * (a tool, a system prompt) raises the count.
 */

/** Long strings (base64 images) count as at most this many characters, like a fixed image cost. */
const MAX_COUNTED_STRING = 2048;

function capLongStrings(_key: string, value: unknown): unknown {
  return typeof value === 'string' && value.length > MAX_COUNTED_STRING ? value.slice(0, MAX_COUNTED_STRING) : value;
}

export function countTokens(value: unknown): number {
  const json = JSON.stringify(value, capLongStrings) ?? '';
  return Math.max(1, Math.ceil(json.length / 4));
}

export function textTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The longest prefix of `text` that fits in `maxTokens` tokens. */
export function truncateToTokens(text: string, maxTokens: number): string {
  return text.slice(0, maxTokens * 4);
}
