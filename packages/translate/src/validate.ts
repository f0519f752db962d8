/**
 * Body checks for the client dialects, before any provider is called. Each problem names the field
 * the way a client writes it (e.g. `messages[2].role`), so a 400 says exactly what to fix.
 */
import type { Dialect } from './ir.ts';
import { isRecord, type Json } from './json.ts';

const CHAT_ROLES = ['system', 'user', 'assistant', 'tool', 'developer'];
/** `system` turns inside `messages`: current Claude clients send them (DECISIONS.md, "Real clients"). */
const MESSAGES_ROLES = ['user', 'assistant', 'system'];
const RESPONSES_ROLES = ['user', 'assistant', 'system', 'developer'];
const GEMINI_ROLES = ['user', 'model'];

type Problems = string[];

function typeName(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

function requireString(body: Json, field: string, problems: Problems, where = field): void {
  const value = body[field];
  if (value === undefined) problems.push(`${where} is required`);
  else if (typeof value !== 'string' || value === '') problems.push(`${where} must be a non-empty string`);
}

function optionalType(body: Json, field: string, type: 'string' | 'boolean' | 'object', problems: Problems, where = field): void {
  const value = body[field];
  if (value === undefined) return;
  const ok = type === 'object' ? isRecord(value) : typeof value === type;
  if (!ok) problems.push(`${where} must be ${type === 'object' ? 'an object' : `a ${type}`}, not ${typeName(value)}`);
}

/** The largest output cap accepted: int32, as providers take it; no model writes more. */
const MAX_TOKENS_CAP = 2_147_483_647;

function positiveInt(body: Json, field: string, problems: Problems, required = false): void {
  const value = body[field];
  if (value === undefined) {
    if (required) problems.push(`${field} is required`);
    return;
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) problems.push(`${field} must be a positive integer`);
  else if (value > MAX_TOKENS_CAP) problems.push(`${field} must be at most ${MAX_TOKENS_CAP}`);
}

function numberIn(body: Json, field: string, min: number, max: number, problems: Problems): void {
  const value = body[field];
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    problems.push(`${field} must be a number from ${min} to ${max}`);
  }
}

function stringList(body: Json, field: string, problems: Problems, allowString: boolean): void {
  const value = body[field];
  if (value === undefined || (allowString && typeof value === 'string')) return;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    problems.push(`${field} must be ${allowString ? 'a string or ' : ''}an array of strings`);
  }
}

/** The list itself: present, an array, not empty; returns its entries for item checks. */
function requireList(body: Json, field: string, problems: Problems): unknown[] {
  const value = body[field];
  if (value === undefined) problems.push(`${field} is required`);
  else if (!Array.isArray(value)) problems.push(`${field} must be an array`);
  else if (value.length === 0) problems.push(`${field} must not be empty`);
  else return value;
  return [];
}

function role(item: Json, allowed: string[], where: string, problems: Problems): void {
  if (typeof item.role !== 'string' || !allowed.includes(item.role)) problems.push(`${where}.role must be one of ${allowed.join(', ')}`);
}

/** Content as a string or an array of typed parts/blocks. */
function content(item: Json, where: string, problems: Problems, nullable: boolean): void {
  const value = item.content;
  if (typeof value === 'string' || (nullable && (value === undefined || value === null))) return;
  if (!Array.isArray(value)) {
    problems.push(`${where}.content must be a string or an array of content parts`);
    return;
  }
  value.forEach((part, j) => {
    if (!isRecord(part) || typeof part.type !== 'string') problems.push(`${where}.content[${j}].type must be a string`);
  });
}

function tools(body: Json, problems: Problems, check: (tool: Json, where: string) => void): void {
  const value = body.tools;
  if (value === undefined) return;
  if (!Array.isArray(value)) {
    problems.push('tools must be an array');
    return;
  }
  value.forEach((tool, i) => {
    if (isRecord(tool)) check(tool, `tools[${i}]`);
    else problems.push(`tools[${i}] must be an object`);
  });
}

function validateChat(body: Json, problems: Problems): void {
  requireString(body, 'model', problems);
  requireList(body, 'messages', problems).forEach((raw, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(raw)) {
      problems.push(`${where} must be an object`);
      return;
    }
    role(raw, CHAT_ROLES, where, problems);
    // An assistant turn may be only tool calls.
    content(raw, where, problems, raw.role === 'assistant');
    if (raw.role === 'tool') requireString(raw, 'tool_call_id', problems, `${where}.tool_call_id`);
    if (raw.tool_calls !== undefined && !Array.isArray(raw.tool_calls)) problems.push(`${where}.tool_calls must be an array`);
  });
  optionalType(body, 'stream', 'boolean', problems);
  optionalType(body, 'stream_options', 'object', problems);
  positiveInt(body, 'max_tokens', problems);
  positiveInt(body, 'max_completion_tokens', problems);
  numberIn(body, 'temperature', 0, 2, problems);
  numberIn(body, 'top_p', 0, 1, problems);
  stringList(body, 'stop', problems, true);
  // One choice per request: the only form every provider can serve, and what the hold covers.
  if (body.n !== undefined && body.n !== 1) problems.push('n must be 1');
  tools(body, problems, (tool, where) => {
    if (tool.type !== 'function') problems.push(`${where}.type must be function`);
    if (!isRecord(tool.function)) problems.push(`${where}.function must be an object`);
    else requireString(tool.function, 'name', problems, `${where}.function.name`);
  });
}

function validateMessages(body: Json, problems: Problems): void {
  requireString(body, 'model', problems);
  positiveInt(body, 'max_tokens', problems, true);
  requireList(body, 'messages', problems).forEach((raw, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(raw)) {
      problems.push(`${where} must be an object`);
      return;
    }
    role(raw, MESSAGES_ROLES, where, problems);
    content(raw, where, problems, false);
  });
  const system = body.system;
  if (system !== undefined && typeof system !== 'string' && !Array.isArray(system)) problems.push('system must be a string or an array of text blocks');
  optionalType(body, 'stream', 'boolean', problems);
  numberIn(body, 'temperature', 0, 1, problems);
  numberIn(body, 'top_p', 0, 1, problems);
  stringList(body, 'stop_sequences', problems, false);
  tools(body, problems, (tool, where) => requireString(tool, 'name', problems, `${where}.name`));
}

function validateResponses(body: Json, problems: Problems): void {
  requireString(body, 'model', problems);
  const input = body.input;
  if (input === undefined) problems.push('input is required');
  else if (Array.isArray(input)) {
    input.forEach((raw, i) => {
      const where = `input[${i}]`;
      if (!isRecord(raw)) problems.push(`${where} must be an object`);
      else if (raw.type === undefined || raw.type === 'message') {
        role(raw, RESPONSES_ROLES, where, problems);
        content(raw, where, problems, false);
      } else if (typeof raw.type !== 'string') problems.push(`${where}.type must be a string`);
    });
  } else if (typeof input !== 'string') problems.push('input must be a string or an array of items');
  optionalType(body, 'instructions', 'string', problems);
  optionalType(body, 'stream', 'boolean', problems);
  positiveInt(body, 'max_output_tokens', problems);
  numberIn(body, 'temperature', 0, 2, problems);
  numberIn(body, 'top_p', 0, 1, problems);
  tools(body, problems, (tool, where) => {
    if (typeof tool.type !== 'string') problems.push(`${where}.type must be a string`);
    else if (tool.type === 'function') requireString(tool, 'name', problems, `${where}.name`);
  });
}

function validateGemini(body: Json, problems: Problems): void {
  requireList(body, 'contents', problems).forEach((raw, i) => {
    const where = `contents[${i}]`;
    if (!isRecord(raw)) problems.push(`${where} must be an object`);
    else {
      if (raw.role !== undefined) role(raw, GEMINI_ROLES, where, problems);
      if (!Array.isArray(raw.parts)) problems.push(`${where}.parts must be an array`);
    }
  });
  optionalType(body, 'generationConfig', 'object', problems);
}

const VALIDATORS: Record<Dialect, (body: Json, problems: Problems) => void> = {
  chat: validateChat,
  messages: validateMessages,
  responses: validateResponses,
  gemini: validateGemini,
};

/** Dialects whose optional top-level fields may be `null`, meaning "not set" (the OpenAI API's). */
const NULL_MEANS_UNSET: ReadonlySet<Dialect> = new Set(['chat', 'responses']);

/**
 * The body as the rest of the gateway reads it: in the OpenAI dialects a top-level field sent as
 * `null` is left out, as OpenAI reads it ("not set": its SDK types `instructions`,
 * `max_output_tokens`, `temperature`, `stream`… as nullable). Leaving it out, rather than every
 * reader minding `null`, also keeps a `null` from reaching a provider that reads it otherwise
 * (a compatible server told `max_tokens: null` would write past the hold's cap). A required
 * field sent as `null` is then missing, and is refused as such. Other dialects: unchanged.
 */
export function withoutNullFields(dialect: Dialect, body: unknown): unknown {
  if (!NULL_MEANS_UNSET.has(dialect) || !isRecord(body)) return body;
  if (!Object.values(body).includes(null)) return body;
  return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null));
}

/** Human-readable problems with a request body in `dialect`; empty when it is acceptable. */
export function validateRequest(dialect: Dialect, body: unknown): string[] {
  if (!isRecord(body)) return ['the request body must be a JSON object'];
  const problems: Problems = [];
  VALIDATORS[dialect](body, problems);
  return problems;
}
