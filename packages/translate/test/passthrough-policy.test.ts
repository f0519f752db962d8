import { describe, expect, it } from 'vitest';
import { prepareRequest, TranslateError, translateRequest, type Dialect } from '../src/index.ts';

const OPTS = { upstreamModel: 'up' };
const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const messages = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
const responses = { model: 'm', input: 'hi' };
const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
const BASE: Record<Dialect, Record<string, unknown>> = { chat, messages, responses, gemini };

/** A body as JSON.parse gives it: `__proto__` an own key, as a client's JSON text can make it. */
const parsed = (json: string) => JSON.parse(json) as Record<string, unknown>;

describe('pass-through policy (issue 20 finding 8, docs/clients-passthrough.md)', () => {
  it.each(['chat', 'messages', 'responses', 'gemini'] as const)('%s: prototype keys at the top level are dropped, unknown fields pass', (dialect) => {
    const body = { ...parsed('{"__proto__":{"polluted":true},"constructor":{"prototype":{}},"prototype":1}'), ...BASE[dialect], some_new_field: { a: 1 } };
    const out = translateRequest(dialect, dialect, body, OPTS);
    for (const key of ['__proto__', 'constructor', 'prototype']) expect(Object.hasOwn(out, key)).toBe(false);
    expect(out.some_new_field).toEqual({ a: 1 });
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('a property named constructor inside a tool schema is data and stays', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { constructor: { type: 'string' } } } } }];
    expect(translateRequest('chat', 'chat', { ...chat, tools }, OPTS).tools).toEqual(tools);
  });

  it('responses: store is off whatever the client sent, background dropped, end-user ids and metadata dropped', () => {
    for (const store of [true, false, undefined]) {
      const out = translateRequest('responses', 'responses', { ...responses, store, background: true, metadata: { a: 'b' }, user: 'u', safety_identifier: 's' }, OPTS);
      expect(out).toEqual({ model: 'up', input: 'hi', store: false });
    }
  });

  it.each([
    ['previous_response_id', 'resp_123', /previous_response_id is not supported.*whole conversation in input/],
    ['conversation', 'conv_123', /conversation is not supported/],
    ['prompt', { id: 'pmpt_123' }, /prompt \(a stored prompt template\) is not supported/],
  ])('responses: %s (provider-side state) is refused with the fix', (field, value, message) => {
    const call = () => prepareRequest('responses', 'responses', { ...responses, [field]: value }, OPTS);
    expect(call).toThrow(TranslateError);
    expect(call).toThrow(message);
  });

  it('chat: store off (when sent), metadata and end-user ids dropped', () => {
    expect(translateRequest('chat', 'chat', { ...chat, store: true, metadata: { a: 'b' }, user: 'u', safety_identifier: 's' }, OPTS)).toEqual({ ...chat, model: 'up', store: false });
    expect(translateRequest('chat', 'chat', chat, OPTS)).not.toHaveProperty('store');
  });

  it('messages: metadata (user_id) dropped; a container refused', () => {
    expect(translateRequest('messages', 'messages', { ...messages, metadata: { user_id: 'u' } }, OPTS)).toEqual({ ...messages, model: 'up' });
    expect(() => translateRequest('messages', 'messages', { ...messages, container: 'container_1' }, OPTS)).toThrow(/container is not supported/);
  });

  it('gemini: a cached content of the provider account is refused', () => {
    expect(() => translateRequest('gemini', 'gemini', { ...gemini, cachedContent: 'cachedContents/abc' }, OPTS)).toThrow(/cachedContent is not supported/);
  });

  it('translated bodies follow the same policy (chat ↔ responses copies store, metadata, user)', () => {
    const out = translateRequest('chat', 'responses', { ...chat, store: true, metadata: { a: 'b' }, user: 'u' }, OPTS);
    expect(out.store).toBe(false);
    expect(out).not.toHaveProperty('metadata');
    expect(out).not.toHaveProperty('user');
  });
});
