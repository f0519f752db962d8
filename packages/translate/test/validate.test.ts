import { describe, expect, it } from 'vitest';
import { validateRequest, withoutNullFields, type Dialect } from '../src/index.ts';
import { REQUESTS } from './fixtures.ts';

const chat = (extra: Record<string, unknown>) => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
const messages = (extra: Record<string, unknown>) => ({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra });
const responses = (extra: Record<string, unknown>) => ({ model: 'm', input: 'hi', ...extra });

describe('validateRequest', () => {
  it.each(['chat', 'messages', 'responses', 'gemini'] as const)('accepts the %s fixture', (dialect) => {
    expect(validateRequest(dialect, REQUESTS[dialect])).toEqual([]);
  });

  it.each([
    ['chat', 'not an object', [1, 2], ['the request body must be a JSON object']],
    ['chat', 'missing model and messages', {}, ['model is required', 'messages is required']],
    ['chat', 'empty model', chat({ model: '' }), ['model must be a non-empty string']],
    ['chat', 'messages not a list', chat({ messages: 'hi' }), ['messages must be an array']],
    ['chat', 'no messages', chat({ messages: [] }), ['messages must not be empty']],
    [
      'chat',
      'unknown role',
      chat({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'robot', content: 'c' }] }),
      ['messages[2].role must be one of system, user, assistant, tool, developer'],
    ],
    ['chat', 'message not an object', chat({ messages: ['hi'] }), ['messages[0] must be an object']],
    ['chat', 'user without content', chat({ messages: [{ role: 'user' }] }), ['messages[0].content must be a string or an array of content parts']],
    ['chat', 'assistant with only tool calls', chat({ messages: [{ role: 'assistant', content: null, tool_calls: [] }] }), []],
    ['chat', 'part without type', chat({ messages: [{ role: 'user', content: [{ text: 'a' }] }] }), ['messages[0].content[0].type must be a string']],
    ['chat', 'tool without call id', chat({ messages: [{ role: 'tool', content: 'r' }] }), ['messages[0].tool_call_id is required']],
    ['chat', 'stream as string', chat({ stream: 'true' }), ['stream must be a boolean, not string']],
    ['chat', 'zero max_tokens', chat({ max_tokens: 0 }), ['max_tokens must be a positive integer']],
    ['chat', 'max_tokens past any model', chat({ max_tokens: 1e21 }), ['max_tokens must be at most 2147483647']],
    ['messages', 'max_tokens past any model', messages({ max_tokens: 9_300_000_000_000_000_000 }), ['max_tokens must be at most 2147483647']],
    ['responses', 'max_output_tokens past any model', responses({ max_output_tokens: 2 ** 31 }), ['max_output_tokens must be at most 2147483647']],
    ['chat', 'fractional max_completion_tokens', chat({ max_completion_tokens: 1.5 }), ['max_completion_tokens must be a positive integer']],
    ['chat', 'temperature too high', chat({ temperature: 3 }), ['temperature must be a number from 0 to 2']],
    ['chat', 'top_p as string', chat({ top_p: '0.5' }), ['top_p must be a number from 0 to 1']],
    ['chat', 'stop of numbers', chat({ stop: [1] }), ['stop must be a string or an array of strings']],
    ['chat', 'several choices', chat({ n: 2 }), ['n must be 1']],
    ['chat', 'tool without name', chat({ tools: [{ type: 'function', function: {} }] }), ['tools[0].function.name is required']],
    ['chat', 'tools not a list', chat({ tools: {} }), ['tools must be an array']],
    ['messages', 'missing max_tokens', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, ['max_tokens is required']],
    ['messages', 'negative max_tokens', messages({ max_tokens: -5 }), ['max_tokens must be a positive integer']],
    [
      'messages',
      'system turns in messages, as current Claude clients send them',
      messages({ messages: [{ role: 'user', content: 'a' }, { role: 'system', content: [{ type: 'text', text: 'c' }] }, { role: 'assistant', content: 'b' }] }),
      [],
    ],
    ['messages', 'unknown role', messages({ messages: [{ role: 'tool', content: 'c' }] }), ['messages[0].role must be one of user, assistant, system']],
    ['messages', 'system as number', messages({ system: 5 }), ['system must be a string or an array of text blocks']],
    ['messages', 'temperature above 1', messages({ temperature: 1.5 }), ['temperature must be a number from 0 to 1']],
    ['messages', 'stop_sequences as string', messages({ stop_sequences: 'END' }), ['stop_sequences must be an array of strings']],
    ['messages', 'tool without name', messages({ tools: [{ input_schema: {} }] }), ['tools[0].name is required']],
    ['responses', 'missing input', { model: 'm' }, ['input is required']],
    ['responses', 'input as number', responses({ input: 5 }), ['input must be a string or an array of items']],
    ['responses', 'bad item role', responses({ input: [{ role: 'tool', content: 'x' }] }), ['input[0].role must be one of user, assistant, system, developer']],
    ['responses', 'typed items are not role-checked', responses({ input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] }), []],
    ['responses', 'instructions as list', responses({ instructions: ['a'] }), ['instructions must be a string, not array']],
    ['responses', 'zero max_output_tokens', responses({ max_output_tokens: 0 }), ['max_output_tokens must be a positive integer']],
    ['responses', 'function tool without name', responses({ tools: [{ type: 'function' }] }), ['tools[0].name is required']],
    ['gemini', 'bad role', { contents: [{ role: 'assistant', parts: [] }] }, ['contents[0].role must be one of user, model']],
  ] as Array<[Dialect, string, unknown, string[]]>)('%s: %s', (dialect, _name, body, problems) => {
    expect(validateRequest(dialect, body)).toEqual(problems);
  });

  it('reports every problem at once', () => {
    expect(validateRequest('messages', { messages: [{ role: 'bot' }], stream: 1 })).toEqual([
      'model is required',
      'max_tokens is required',
      'messages[0].role must be one of user, assistant, system',
      'messages[0].content must be a string or an array of content parts',
      'stream must be a boolean, not number',
    ]);
  });
});

describe('withoutNullFields: null means "not set" in the OpenAI dialects', () => {
  it('responses and chat: optional fields sent as null are left out and the body is valid', () => {
    const nulls = withoutNullFields('responses', responses({ instructions: null, max_output_tokens: null, temperature: null, top_p: null, stream: null }));
    expect(nulls).toEqual(responses({}));
    expect(validateRequest('responses', nulls)).toEqual([]);
    const chatNulls = withoutNullFields('chat', chat({ max_tokens: null, max_completion_tokens: null, stop: null, n: null, stream_options: null, stream: null }));
    expect(chatNulls).toEqual(chat({}));
    expect(validateRequest('chat', chatNulls)).toEqual([]);
  });

  it('a required field sent as null is missing; messages keeps its nulls and refuses them', () => {
    expect(validateRequest('chat', withoutNullFields('chat', chat({ model: null })))).toEqual(['model is required']);
    const withNull = messages({ temperature: null });
    expect(withoutNullFields('messages', withNull)).toBe(withNull);
    expect(validateRequest('messages', withNull)).toEqual(['temperature must be a number from 0 to 1']);
  });
});
