import { describe, expect, it } from 'vitest';
import { parseBody } from '../src/schemas/problems.ts';
import { ChatCompletionRequest, CountTokensRequest, LegacyChatRequest, MessagesRequest, ResponsesRequest } from '../src/schemas/text.ts';
import { refusal } from './support/refusal.ts';

// Step 4 of the order of checks for the text protocols: each route's body schema, with the words
// its 400 uses. (Through the routes, with the checks before it: route-checks.test.ts, client-values.test.ts.)

const SCHEMA_OF = { chat: ChatCompletionRequest, messages: MessagesRequest, responses: ResponsesRequest };
type Dialect = keyof typeof SCHEMA_OF;

/** The problems named by the 400 of `body` on `dialect`'s route ([] when it is valid). */
function problems(dialect: Dialect, body: unknown): string[] {
  const result = SCHEMA_OF[dialect].safeParse(body);
  if (result.success) return [];
  const message = refusal(() => parseBody(SCHEMA_OF[dialect], body)).message;
  return message.replace(/^Invalid request: /, '').replace(/\.$/, '').split('; ');
}

const chat = (extra: Record<string, unknown>) => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
const messages = (extra: Record<string, unknown>) => ({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra });
const responses = (extra: Record<string, unknown>) => ({ model: 'm', input: 'hi', ...extra });

const IMAGE = 'data:image/png;base64,iVBORw0KGgo=';
const TOOL_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

/** A full request of each protocol: every kind of turn, content part, item and tool the gateway reads. */
const FULL: Record<Dialect, Record<string, unknown>> = {
  chat: {
    model: 'm',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather? See photo.' }, { type: 'image_url', image_url: { url: IMAGE } }] },
      { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: '18C' },
    ],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: TOOL_SCHEMA } }],
    tool_choice: 'auto',
    max_completion_tokens: 256,
    temperature: 0.5,
    top_p: 0.9,
    stop: ['END'],
    n: 1,
  },
  messages: {
    model: 'm',
    max_tokens: 256,
    system: [{ type: 'text', text: 'You are terse.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_0', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_0', content: '18C' }] },
    ],
    tools: [{ name: 'get_weather', input_schema: TOOL_SCHEMA }, { type: 'web_search_20250305', name: 'web_search' }],
    stop_sequences: ['END'],
    temperature: 0.5,
    stream: true,
  },
  responses: {
    model: 'm',
    instructions: 'You are terse.',
    input: [
      { role: 'user', content: [{ type: 'input_text', text: 'Weather?' }, { type: 'input_image', image_url: IMAGE }] },
      { type: 'message', role: 'assistant', content: 'Checking.' },
      { type: 'function_call', call_id: 'call_0', name: 'get_weather', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_0', output: '18C' },
    ],
    tools: [{ type: 'function', name: 'get_weather', parameters: TOOL_SCHEMA }, { type: 'web_search' }],
    max_output_tokens: 256,
    store: false,
  },
};

describe('the text request schemas', () => {
  it.each(['chat', 'messages', 'responses'] as const)('accept a full %s request, every field as sent', (dialect) => {
    expect(parseBody(SCHEMA_OF[dialect], FULL[dialect])).toEqual(FULL[dialect]);
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
    ['chat', 'stop of numbers', chat({ stop: [1] }), ['stop[0] must be a string']],
    ['chat', 'stop as a number', chat({ stop: 1 }), ['stop must be a string or an array of strings']],
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
  ] as Array<[Dialect, string, unknown, string[]]>)('%s: %s', (dialect, _name, body, expected) => {
    expect(problems(dialect, body)).toEqual(expected);
  });

  it('report every problem at once, in the order of the fields', () => {
    expect(problems('messages', { messages: [{ role: 'bot' }], stream: 1 })).toEqual([
      'model is required',
      'max_tokens is required',
      'messages[0].role must be one of user, assistant, system',
      'messages[0].content must be a string or an array of content parts',
      'stream must be a boolean, not number',
    ]);
  });

  it('name the part that is wrong inside a list, not only the list', () => {
    expect(problems('responses', responses({ input: [{ role: 'user', content: [{ type: 'input_text' }, { text: 'a' }] }] }))).toEqual(['input[0].content[1].type must be a string']);
    expect(problems('chat', chat({ stop: ['a', 2] }))).toEqual(['stop[1] must be a string']);
    expect(problems('messages', messages({ stop_sequences: ['a', 2] }))).toEqual(['stop_sequences[1] must be a string']);
  });
});

describe('null means "not set" in the OpenAI protocols', () => {
  it('responses and chat: optional fields sent as null are left out of the body handed on', () => {
    expect(parseBody(ResponsesRequest, responses({ instructions: null, max_output_tokens: null, temperature: null, top_p: null, stream: null, user: null }))).toEqual(responses({}));
    expect(parseBody(ChatCompletionRequest, chat({ max_tokens: null, max_completion_tokens: null, stop: null, n: null, stream_options: null, stream: null, tools: null }))).toEqual(chat({}));
  });

  it('a required field sent as null is missing; messages refuses null', () => {
    expect(problems('chat', chat({ model: null }))).toEqual(['model is required']);
    expect(problems('responses', responses({ input: null }))).toEqual(['input is required']);
    expect(problems('messages', messages({ temperature: null }))).toEqual(['temperature must be a number from 0 to 1']);
  });
});

describe('the bodies a route goes on with', () => {
  it('count_tokens: a messages request without max_tokens or stream, which are left out when sent', () => {
    expect(parseBody(CountTokensRequest, { model: 'm', messages: [{ role: 'user', content: 'hi' }], system: 'be brief' })).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }], system: 'be brief' });
    expect(parseBody(CountTokensRequest, messages({ stream: 'yes', max_tokens: 'many' }))).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(refusal(() => parseBody(CountTokensRequest, { model: 'm', messages: [] })).message).toBe('Invalid request: messages must not be empty.');
  });

  it('/chat: model and messages of string content only, never streamed; other fields are not read', () => {
    expect(parseBody(LegacyChatRequest, { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 9, stream: false })).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(refusal(() => parseBody(LegacyChatRequest, { model: 'm', messages: [{ role: 'tool', content: [] }], stream: true })).message).toBe(
      'Invalid request: messages[0].role must be one of system, user, assistant; messages[0].content must be a string; stream is not supported on /chat; use /chat/completions.',
    );
  });
});
