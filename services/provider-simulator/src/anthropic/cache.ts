import { asArray, asObject, isObject } from '../json.ts';
import { countTokens } from '../tokens.ts';
import type { JsonObject } from '../types.ts';

export interface InputUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** Prompt pieces in the order Anthropic caches them: tools, then system, then message blocks. */
function promptPieces(body: JsonObject): unknown[] {
  const system = typeof body.system === 'string' ? [body.system] : asArray(body.system);
  const blocks = asArray(body.messages).flatMap((m) => {
    const content = asObject(m).content;
    return Array.isArray(content) ? content : [m];
  });
  return [...asArray(body.tools), ...system, ...blocks];
}

/** Total input tokens, as `count_tokens` reports them. */
export function anthropicInputTokens(body: JsonObject): number {
  return countTokens({ system: body.system, messages: body.messages, tools: body.tools });
}

/**
 * Splits the input tokens when the request uses prompt caching (`cache_control` on a block, or at the
 * top level): the prefix up to the last breakpoint is reported half as a cache write, half as a cache
 * read. Stateless, so the same request always reports the same usage, and the three fields always add
 * up to the `count_tokens` total.
 */
export function anthropicInputUsage(body: JsonObject): InputUsage {
  const total = anthropicInputTokens(body);
  const pieces = promptPieces(body);
  let lastBreakpoint = -1;
  pieces.forEach((piece, i) => {
    if (isObject(piece) && isObject(piece.cache_control)) lastBreakpoint = i;
  });
  if (isObject(body.cache_control)) lastBreakpoint = pieces.length - 1;
  if (lastBreakpoint < 0 || total < 3) {
    return { input_tokens: total, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  }
  const prefix = Math.min(Math.max(countTokens(pieces.slice(0, lastBreakpoint + 1)), 2), total - 1);
  const read = Math.floor(prefix / 2);
  return { input_tokens: total - prefix, cache_creation_input_tokens: prefix - read, cache_read_input_tokens: read };
}
