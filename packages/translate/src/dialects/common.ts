/** Helpers the dialect codecs share for building and reading the neutral message list. */
import { TranslateError } from '../errors.ts';
import type { Message, Part, ResponseContext, TextPart, ToolChoice, ToolResultPart } from '../ir.ts';

/**
 * Refuses request fields that ask for a feature of the provider's own servers (hosted tools,
 * stored state, audio): another provider has no counterpart, and dropping them silently would
 * answer a different request than the one asked.
 */
export function refuseServerFeatures(body: Record<string, unknown>, fields: readonly string[]): void {
  for (const field of fields) {
    if (body[field] !== undefined && body[field] !== null) {
      throw new TranslateError(`${field} asks for a feature of the provider's own servers and cannot be sent to this model`);
    }
  }
}

/**
 * OpenAI's `allowed_tools` choice (mode `auto` or `required` over a subset of the tools) as every
 * dialect can say it: only the allowed tools are sent, with that mode.
 */
export function restrictToAllowed<T extends { name: string }>(tools: T[], mode: unknown, names: Array<string | undefined>): { tools: T[]; toolChoice: ToolChoice } {
  if (mode !== 'auto' && mode !== 'required') throw new TranslateError(`tool_choice mode "${String(mode)}" cannot be sent to this model`);
  const allowed = new Set(names);
  const kept = tools.filter((tool) => allowed.has(tool.name));
  if (kept.length === 0) throw new TranslateError("tool_choice allows none of the request's tools");
  return { tools: kept, toolChoice: { type: mode } };
}

export function pushMessage(messages: Message[], role: Message['role'], parts: Part[]): void {
  if (parts.length > 0) messages.push({ role, parts });
}

/**
 * Adds a tool result to the trailing user turn of results, or starts one. Chat and responses carry
 * each result as a message/item of its own; messages and gemini want them grouped in one turn.
 */
export function pushToolResult(messages: Message[], part: ToolResultPart): void {
  const last = messages.at(-1);
  if (last?.role === 'user' && last.parts.every((p) => p.type === 'tool_result')) last.parts.push(part);
  else messages.push({ role: 'user', parts: [part] });
}

/**
 * Adds parts to the trailing assistant turn, or starts one: responses items are flat (one
 * reasoning, message or call per item), and one turn of the model is several of them.
 */
export function pushAssistantParts(messages: Message[], parts: Part[]): void {
  if (parts.length === 0) return;
  const last = messages.at(-1);
  if (last?.role === 'assistant') last.parts.push(...parts);
  else messages.push({ role: 'assistant', parts });
}

export function textPart(text: string): TextPart[] {
  return text === '' ? [] : [{ type: 'text', text }];
}

export function joinText(parts: readonly Part[]): string {
  let text = '';
  for (const part of parts) if (part.type === 'text') text += part.text;
  return text;
}

/** Tool results first: messages requires them at the start of their turn, chat/responses before the user's text. */
export function resultsFirst(parts: readonly Part[]): { results: ToolResultPart[]; rest: Part[] } {
  const results: ToolResultPart[] = [];
  const rest: Part[] = [];
  for (const part of parts) {
    if (part.type === 'tool_result') results.push(part);
    else rest.push(part);
  }
  return { results, rest };
}

/**
 * Id for a gemini function call, which has none: deterministic, and unique across turns because it
 * includes the response id (clients and the messages dialect expect distinct call ids).
 */
export function synthesizedCallId(ctx: ResponseContext, n: number): string {
  return `call_${ctx.id.replace(/[^A-Za-z0-9_-]/g, '_')}_${n}`;
}
