/**
 * Usage objects of each dialect ↔ the neutral {@link Usage}. Readers return undefined when the
 * object carries no token counts, so "a success without usage" stays detectable.
 */
import type { Usage } from './ir.ts';
import { isRecord, num, rec, type Json } from './json.ts';

function makeUsage(parts: {
  input: number;
  output: number;
  cacheCreation?: number;
  cacheRead?: number;
  reasoning?: number;
  reportedTotal?: number;
}): Usage {
  const sum = parts.input + parts.output;
  const usage: Usage = {
    inputTokens: parts.input,
    outputTokens: parts.output,
    cacheCreationTokens: parts.cacheCreation ?? 0,
    cacheReadTokens: parts.cacheRead ?? 0,
    totalBillable: Math.max(sum, parts.reportedTotal ?? 0),
  };
  if (parts.reasoning !== undefined && parts.reasoning > 0) usage.reasoningTokens = parts.reasoning;
  return usage;
}

/** chat `usage`: prompt_tokens already includes cached tokens (`prompt_tokens_details.cached_tokens`). */
export function readChatUsage(value: unknown): Usage | undefined {
  if (!isRecord(value)) return undefined;
  const input = num(value.prompt_tokens);
  const output = num(value.completion_tokens);
  if (input === undefined && output === undefined) return undefined;
  return makeUsage({
    input: input ?? 0,
    output: output ?? 0,
    cacheRead: num(rec(value.prompt_tokens_details).cached_tokens),
    reasoning: num(rec(value.completion_tokens_details).reasoning_tokens),
    reportedTotal: num(value.total_tokens),
  });
}

/** messages `usage`: input_tokens excludes the cache fields, which are billed too. */
export function readMessagesUsage(value: unknown): Usage | undefined {
  if (!isRecord(value)) return undefined;
  const input = num(value.input_tokens);
  const output = num(value.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const cacheCreation = num(value.cache_creation_input_tokens) ?? 0;
  const cacheRead = num(value.cache_read_input_tokens) ?? 0;
  return makeUsage({ input: (input ?? 0) + cacheCreation + cacheRead, output: output ?? 0, cacheCreation, cacheRead });
}

/** responses `usage`: input_tokens includes `input_tokens_details.cached_tokens`. */
export function readResponsesUsage(value: unknown): Usage | undefined {
  if (!isRecord(value)) return undefined;
  const input = num(value.input_tokens);
  const output = num(value.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  return makeUsage({
    input: input ?? 0,
    output: output ?? 0,
    cacheRead: num(rec(value.input_tokens_details).cached_tokens),
    reasoning: num(rec(value.output_tokens_details).reasoning_tokens),
    reportedTotal: num(value.total_tokens),
  });
}

/**
 * gemini `usageMetadata`: candidatesTokenCount excludes thinking tokens (thoughtsTokenCount), and
 * tool-use prompt tokens are input; both are billed, so they are folded into output and input.
 */
export function readGeminiUsage(value: unknown): Usage | undefined {
  if (!isRecord(value)) return undefined;
  const prompt = num(value.promptTokenCount);
  const candidates = num(value.candidatesTokenCount);
  const thoughts = num(value.thoughtsTokenCount);
  if (prompt === undefined && candidates === undefined && thoughts === undefined) return undefined;
  return makeUsage({
    input: (prompt ?? 0) + (num(value.toolUsePromptTokenCount) ?? 0),
    output: (candidates ?? 0) + (thoughts ?? 0),
    cacheRead: num(value.cachedContentTokenCount),
    reasoning: thoughts,
    reportedTotal: num(value.totalTokenCount),
  });
}

export function writeChatUsage(u: Usage): Json {
  return {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.totalBillable,
    prompt_tokens_details: { cached_tokens: u.cacheReadTokens },
  };
}

export function writeMessagesUsage(u: Usage): Json {
  return {
    input_tokens: Math.max(0, u.inputTokens - u.cacheCreationTokens - u.cacheReadTokens),
    cache_creation_input_tokens: u.cacheCreationTokens,
    cache_read_input_tokens: u.cacheReadTokens,
    output_tokens: u.outputTokens,
  };
}

export function writeResponsesUsage(u: Usage): Json {
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cacheReadTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: u.totalBillable,
  };
}

export function writeGeminiUsage(u: Usage): Json {
  const out: Json = {
    promptTokenCount: u.inputTokens,
    candidatesTokenCount: u.outputTokens,
    totalTokenCount: u.totalBillable,
  };
  if (u.cacheReadTokens > 0) out.cachedContentTokenCount = u.cacheReadTokens;
  return out;
}
