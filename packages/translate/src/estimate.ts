/**
 * Worst-case token figures for the wallet hold, computed without calling a provider.
 *
 * Why bytes bound tokens: every tokenizer in use (OpenAI's and Anthropic's byte-level BPE, Gemini's
 * SentencePiece with byte fallback) maps each token to at least one byte of the text, so a text of
 * N UTF-8 bytes has at most N tokens. Counting the whole JSON body (not only the text) also covers
 * the per-message role/framing tokens, since each message costs more JSON bytes (`{"role":…}`) than
 * framing tokens. Base64 image data counts as its byte size, which exceeds what any provider
 * charges for a large image; fixed allowances cover what bytes cannot show: small or URL-referenced
 * images (providers bill per image or per tile, not per byte) and the prompt a provider adds on its
 * own (Anthropic's tool-use preamble is a few hundred tokens).
 */
import type { Dialect } from './ir.ts';
import { isRecord, num, rec } from './json.ts';

/** Above the documented per-image maxima (~1.6k Anthropic, ~2.5k OpenAI patch models, ~4.1k Gemini 16 tiles). */
export const IMAGE_TOKEN_ALLOWANCE = 6000;
/** Provider-added prompt (tool-use preamble, chat templates) beyond what the body's bytes show. */
export const REQUEST_TOKEN_ALLOWANCE = 1024;

const IMAGE_PART_TYPES = new Set(['image_url', 'image', 'input_image']);

/**
 * Image references in any dialect: chat `image_url`, messages `image`, responses `input_image`,
 * gemini media parts. Iterative, and each child is pushed on its own: spreading a container into
 * one call (`push(...array)`) overflows the stack for a flat array of 130,000 numbers.
 */
function countImages(body: unknown): number {
  let count = 0;
  const stack: unknown[] = [body];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'object' && item !== null) stack.push(item);
    } else if (isRecord(value)) {
      if ((typeof value.type === 'string' && IMAGE_PART_TYPES.has(value.type)) || isRecord(value.inlineData) || isRecord(value.fileData)) {
        count += 1;
      }
      for (const key in value) {
        const item = value[key];
        if (Object.hasOwn(value, key) && typeof item === 'object' && item !== null) stack.push(item);
      }
    }
  }
  return count;
}

/** An upper bound of the input tokens of a request body in any dialect; see the module comment. */
export function estimateInputTokensUpperBound(body: unknown): number {
  const bytes = Buffer.byteLength(JSON.stringify(body) ?? '', 'utf8');
  return bytes + countImages(body) * IMAGE_TOKEN_ALLOWANCE + REQUEST_TOKEN_ALLOWANCE;
}

function positiveInt(value: unknown): number | undefined {
  const n = num(value);
  return n !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The request's own output cap, or undefined when it names none (the caller then uses the model's). */
export function maxOutputTokens(dialect: Dialect, body: Record<string, unknown>): number | undefined {
  switch (dialect) {
    case 'chat':
      return positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens);
    case 'messages':
      return positiveInt(body.max_tokens);
    case 'responses':
      return positiveInt(body.max_output_tokens);
    case 'gemini':
      return positiveInt(rec(body.generationConfig).maxOutputTokens);
  }
}
