import OpenAI, { AuthenticationError, toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeSolidPng } from '../src/media/png.ts';
import {
  COMPAT_AUTH,
  decodeImageHeader,
  getJson,
  list,
  mp4Boxes,
  OPENAI_AUTH,
  parseSse,
  postJson,
  type RunningSimulator,
  startSimulator,
} from './support.ts';

let sim: RunningSimulator;
let client: OpenAI;

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a place',
    parameters: {
      type: 'object',
      properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['location'],
    },
  },
};

beforeAll(async () => {
  // A longer video delay leaves polls a wide window to observe `in_progress`.
  sim = await startSimulator({ videoDelayMs: 600 });
  client = new OpenAI({ apiKey: 'sim-openai-key', baseURL: `${sim.url}/openai/v1`, maxRetries: 0 });
  return () => sim.close();
});

describe('OpenAI models', () => {
  it('lists the served models in OpenAI shape', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      expect(model.object).toBe('model');
      ids.push(model.id);
    }
    expect(ids).toEqual(expect.arrayContaining(['gpt-sim-mini', 'gpt-sim-image', 'sora-sim', 'gpt-sim-one-image', 'gpt-sim-url-image']));
    const one = await client.models.retrieve('gpt-sim-mini');
    expect(one.id).toBe('gpt-sim-mini');
  });

  it('rejects a wrong key with 401 in OpenAI error shape', async () => {
    const res = await postJson(`${sim.url}/openai/v1/chat/completions`, { model: 'gpt-sim-mini', messages: [] }, {
      authorization: 'Bearer wrong',
    });
    expect(res.status).toBe(401);
    expect(res.body?.error?.type).toBe('invalid_request_error');
    expect(res.body?.error?.code).toBe('invalid_api_key');
    expect(typeof res.body?.error?.message).toBe('string');
    const missing = await getJson(`${sim.url}/openai/v1/models`);
    expect(missing.status).toBe(401);
    const bad = new OpenAI({ apiKey: 'nope', baseURL: `${sim.url}/openai/v1`, maxRetries: 0 });
    await expect(bad.models.list()).rejects.toBeInstanceOf(AuthenticationError);
  });
});

const ask = () =>
  client.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'Hello there simulator' }] });

describe('OpenAI chat completions', () => {
  it('answers deterministically with usage', async () => {
    const first = await ask();
    const second = await ask();
    expect(first.object).toBe('chat.completion');
    expect(first.choices[0]!.message.content).toMatch(/^Simulated reply to: Hello there simulator\./);
    expect(first.choices[0]!.message.content).toBe(second.choices[0]!.message.content);
    expect(first.choices[0]!.finish_reason).toBe('stop');
    expect(first.usage!.total_tokens).toBe(first.usage!.prompt_tokens + first.usage!.completion_tokens);
    expect(first.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(first.usage).toEqual(second.usage);
  });

  it('stops at max_completion_tokens with finish_reason length', async () => {
    const res = await client.chat.completions.create({
      model: 'gpt-sim-mini',
      max_completion_tokens: 3,
      messages: [{ role: 'user', content: 'Tell me a long story' }],
    });
    expect(res.choices[0]!.finish_reason).toBe('length');
    expect(res.usage!.completion_tokens).toBe(3);
    expect(res.choices[0]!.message.content!.length).toBeLessThanOrEqual(12);
  });

  it('replies with exactly N filler words on [[sim:words=N]]', async () => {
    const res = await client.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'hi [[sim:words=200]]' }] });
    const text = res.choices[0]!.message.content!;
    expect(text.startsWith('Simulated reply to: hi. ')).toBe(true);
    expect(text.slice('Simulated reply to: hi. '.length).split(' ')).toHaveLength(200);
    expect(res.usage!.completion_tokens).toBe(Math.ceil(text.length / 4));
  });

  it('streams role, several deltas, finish and a usage chunk when include_usage is set', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-sim-mini',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream please' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const contentDeltas = chunks.filter((c) => typeof c.choices[0]?.delta.content === 'string' && c.choices[0].delta.content !== '');
    expect(contentDeltas.length).toBeGreaterThanOrEqual(3);
    const text = contentDeltas.map((c) => c.choices[0]!.delta.content).join('');
    expect(text).toMatch(/^Simulated reply to: Stream please\./);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish!.choices[0]!.finish_reason).toBe('stop');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBeGreaterThan(0);
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
  });

  it('ends the raw stream with data: [DONE] and sends no usage chunk without include_usage', async () => {
    const res = await postJson(
      `${sim.url}/openai/v1/chat/completions`,
      { model: 'gpt-sim-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      OPENAI_AUTH,
    );
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(res.text);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as { usage?: unknown; object: string });
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.some((c) => c.usage !== undefined)).toBe(false);
  });

  it('calls the first tool when asked about the weather, and uses a tool result', async () => {
    const res = await client.chat.completions.create({
      model: 'gpt-sim-mini',
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    });
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ location: 'Paris', unit: 'celsius' });

    const followUp = await client.chat.completions.create({
      model: 'gpt-sim-mini',
      tools: [WEATHER_TOOL],
      messages: [
        { role: 'user', content: 'What is the weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: '22 degrees and sunny' },
      ],
    });
    expect(followUp.choices[0]!.finish_reason).toBe('stop');
    expect(followUp.choices[0]!.message.content).toContain('22 degrees and sunny');
  });

  it('streams tool calls as argument deltas', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-sim-mini',
      stream: true,
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'Use a tool [[sim:tool]]' }],
    });
    let args = '';
    let name = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const call = chunk.choices[0]?.delta.tool_calls?.[0];
      if (call?.function?.name) name = call.function.name;
      args += call?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual({ location: 'Paris', unit: 'celsius' });
    expect(finish).toBe('tool_calls');
  });

  it('counts tokens consistently: tools raise prompt_tokens', async () => {
    const messages = [{ role: 'user' as const, content: 'Count me' }];
    const plain = await client.chat.completions.create({ model: 'gpt-sim-mini', messages });
    const withTools = await client.chat.completions.create({ model: 'gpt-sim-mini', messages, tools: [WEATHER_TOOL] });
    expect(withTools.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens);
  });

  it('answers 404 model_not_found for an unknown model and 400 for a wrong kind', async () => {
    const unknown = await postJson(`${sim.url}/openai/v1/chat/completions`, { model: 'nope', messages: [{ role: 'user', content: 'x' }] }, OPENAI_AUTH);
    expect(unknown.status).toBe(404);
    expect(unknown.body?.error?.code).toBe('model_not_found');
    const wrongKind = await postJson(`${sim.url}/openai/v1/chat/completions`, { model: 'gpt-sim-image', messages: [{ role: 'user', content: 'x' }] }, OPENAI_AUTH);
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body?.error?.type).toBe('invalid_request_error');
  });
});

describe('OpenAI responses API', () => {
  it('creates a response with output_text and usage', async () => {
    const res = await client.responses.create({ model: 'gpt-sim-mini', input: 'Hello responses', instructions: 'Be brief' });
    expect(res.object).toBe('response');
    expect(res.status).toBe('completed');
    expect(res.output_text).toMatch(/^Simulated reply to: Hello responses\./);
    expect(res.usage!.total_tokens).toBe(res.usage!.input_tokens + res.usage!.output_tokens);
    const count = await client.responses.inputTokens.count({ model: 'gpt-sim-mini', input: 'Hello responses', instructions: 'Be brief' });
    expect(count.object).toBe('response.input_tokens');
    expect(count.input_tokens).toBe(res.usage!.input_tokens);
  });

  it('is incomplete when max_output_tokens cuts the text', async () => {
    const res = await client.responses.create({ model: 'gpt-sim-mini', input: 'A long answer please', max_output_tokens: 16 });
    expect(res.status).toBe('incomplete');
    expect(res.incomplete_details?.reason).toBe('max_output_tokens');
    expect(res.usage!.output_tokens).toBe(16);
  });

  it('streams the full event sequence with increasing sequence numbers', async () => {
    const stream = await client.responses.create({ model: 'gpt-sim-mini', input: [{ role: 'user', content: 'Stream it' }], stream: true });
    const events = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThanOrEqual(3);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const numbers = events.map((e) => e.sequence_number);
    expect(numbers).toEqual(numbers.map((_, i) => i));
    const completed = events.at(-1)!;
    if (completed.type !== 'response.completed') throw new Error('expected response.completed');
    expect(completed.response.usage!.output_tokens).toBeGreaterThan(0);
  });

  it('returns and streams function calls, and uses function_call_output', async () => {
    const tools = [{ type: 'function' as const, name: 'get_weather', parameters: WEATHER_TOOL.function.parameters, strict: false }];
    const res = await client.responses.create({ model: 'gpt-sim-mini', tools, input: 'weather in Rome?' });
    const call = res.output[0]!;
    if (call.type !== 'function_call') throw new Error('expected a function_call item');
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual({ location: 'Paris', unit: 'celsius' });

    const stream = await client.responses.create({ model: 'gpt-sim-mini', tools, input: 'weather in Rome?', stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toContain('response.function_call_arguments.delta');
    expect(types).toContain('response.function_call_arguments.done');

    const followUp = await client.responses.create({
      model: 'gpt-sim-mini',
      tools,
      input: [
        { role: 'user', content: 'weather in Rome?' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'Rainy, 14 degrees' },
      ],
    });
    expect(followUp.output_text).toContain('Rainy, 14 degrees');
  });

  it('counts more input tokens with tools', async () => {
    const base = await client.responses.inputTokens.count({ model: 'gpt-sim-mini', input: 'x' });
    const more = await client.responses.inputTokens.count({
      model: 'gpt-sim-mini',
      input: 'x',
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, strict: false }],
    });
    expect(more.input_tokens).toBeGreaterThan(base.input_tokens);
  });
});

describe('OpenAI images', () => {
  it.each([
    ['png', '1024x1024', 1024, 1024],
    ['jpeg', '1536x1024', 1536, 1024],
    ['webp', '1024x1536', 1024, 1536],
  ] as const)('generates a decodable %s at %s', async (format, size, width, height) => {
    const res = await client.images.generate({ model: 'gpt-sim-image', prompt: 'a red fox', size, output_format: format, n: 2 });
    expect(res.data).toHaveLength(2);
    expect(res.output_format).toBe(format);
    expect(res.usage!.output_tokens).toBeGreaterThan(0);
    for (const image of res.data!) {
      const info = decodeImageHeader(Buffer.from(image.b64_json!, 'base64'));
      expect(info).toEqual({ format, width, height });
    }
  });

  it('returns one image whatever n is for gpt-sim-one-image', async () => {
    const res = await client.images.generate({ model: 'gpt-sim-one-image', prompt: 'a cat', n: 4 });
    expect(res.data).toHaveLength(1);
  });

  it('answers with a fetchable url for gpt-sim-url-image', async () => {
    const res = await client.images.generate({ model: 'gpt-sim-url-image', prompt: 'a dog', n: 1 });
    const url = res.data![0]!.url!;
    expect(url).toMatch(/\/openai\/files\/img-.+\.png$/);
    const download = await fetch(url);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(decodeImageHeader(Buffer.from(await download.arrayBuffer())).format).toBe('png');
  });

  it('edits an uploaded image (multipart) keeping its size', async () => {
    const source = encodeSolidPng(640, 480, [10, 20, 30]);
    const res = await client.images.edit({
      model: 'gpt-sim-image',
      prompt: 'make it blue',
      image: await toFile(source, 'source.png', { type: 'image/png' }),
    });
    expect(decodeImageHeader(Buffer.from(res.data![0]!.b64_json!, 'base64'))).toEqual({ format: 'png', width: 640, height: 480 });
  });

  it('edits from JSON with a data URL and rejects a non-image', async () => {
    const source = encodeSolidPng(300, 200, [1, 2, 3]).toString('base64');
    const ok = await postJson(
      `${sim.url}/openai/v1/images/edits`,
      { model: 'gpt-sim-image', prompt: 'edit', images: [{ image_url: `data:image/png;base64,${source}` }], output_format: 'webp' },
      OPENAI_AUTH,
    );
    expect(ok.status).toBe(200);
    const b64 = String(list(ok.body.data)[0]!.b64_json);
    expect(decodeImageHeader(Buffer.from(b64, 'base64'))).toEqual({ format: 'webp', width: 300, height: 200 });
    const bad = await postJson(
      `${sim.url}/openai/v1/images/edits`,
      { model: 'gpt-sim-image', prompt: 'edit', image: Buffer.from('not an image').toString('base64') },
      OPENAI_AUTH,
    );
    expect(bad.status).toBe(400);
    expect(bad.body?.error?.param).toBe('image');
  });
});

describe('OpenAI videos (Sora)', () => {
  it('runs a job from queued to completed and serves an MP4 with ranges', async () => {
    const created = await client.videos.create({ model: 'sora-sim', prompt: 'a wave', seconds: '8', size: '1280x720' });
    expect(created.object).toBe('video');
    expect(created.status).toBe('queued');
    expect(created.seconds).toBe('8');
    expect(created.size).toBe('1280x720');

    let video = created;
    const seen = new Set<string>([created.status]);
    while (video.status !== 'completed' && video.status !== 'failed') {
      await new Promise((r) => setTimeout(r, 50));
      video = await client.videos.retrieve(created.id);
      seen.add(video.status);
    }
    expect(video.status).toBe('completed');
    expect(video.progress).toBe(100);
    expect(seen.has('in_progress')).toBe(true);

    const content = await client.videos.downloadContent(created.id);
    expect(content.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await content.arrayBuffer());
    expect(bytes.toString('latin1', 4, 8)).toBe('ftyp');
    expect(mp4Boxes(bytes)).toEqual(expect.arrayContaining(['ftyp', 'moov', 'mdat']));

    const url = `${sim.url}/openai/v1/videos/${created.id}/content`;
    const partial = await fetch(url, { headers: { ...OPENAI_AUTH, range: 'bytes=0-99' } });
    expect(partial.status).toBe(206);
    expect(partial.headers.get('content-range')).toBe(`bytes 0-99/${bytes.length}`);
    expect(Buffer.from(await partial.arrayBuffer()).equals(bytes.subarray(0, 100))).toBe(true);
    const suffix = await fetch(url, { headers: { ...OPENAI_AUTH, range: 'bytes=-10' } });
    expect(suffix.status).toBe(206);
    expect(Buffer.from(await suffix.arrayBuffer()).equals(bytes.subarray(-10))).toBe(true);
    const unsatisfiable = await fetch(url, { headers: { ...OPENAI_AUTH, range: `bytes=${bytes.length}-` } });
    expect(unsatisfiable.status).toBe(416);
    expect(unsatisfiable.headers.get('content-range')).toBe(`bytes */${bytes.length}`);
  });

  it('accepts a multipart input_reference and rejects a bad one', async () => {
    const good = await client.videos.create({
      model: 'sora-sim',
      prompt: 'animate',
      input_reference: await toFile(encodeSolidPng(720, 1280, [9, 9, 9]), 'first.png', { type: 'image/png' }),
      size: '720x1280',
    });
    expect(good.status).toBe('queued');
    await expect(
      client.videos.create({ model: 'sora-sim', prompt: 'animate', input_reference: await toFile(Buffer.from('nope'), 'x.png') }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('answers 404 for an unknown video', async () => {
    const res = await getJson(`${sim.url}/openai/v1/videos/video_missing`, OPENAI_AUTH);
    expect(res.status).toBe(404);
    expect(typeof res.body?.error?.message).toBe('string');
  });
});

describe('OpenAI-compatible provider', () => {
  it('serves chat completions and models with its own key, and nothing else', async () => {
    const compat = new OpenAI({ apiKey: 'sim-compat-key', baseURL: `${sim.url}/compat/v1`, maxRetries: 0 });
    const models = await compat.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['compat-sim-chat']);
    const res = await compat.chat.completions.create({ model: 'compat-sim-chat', messages: [{ role: 'user', content: 'hi compat' }] });
    expect(res.choices[0]!.message.content).toMatch(/^Simulated reply to: hi compat\./);
    expect(res.usage!.total_tokens).toBeGreaterThan(0);
    const responses = await postJson(`${sim.url}/compat/v1/responses`, { model: 'compat-sim-chat', input: 'x' }, COMPAT_AUTH);
    expect(responses.status).toBe(404);
    expect(typeof responses.body?.error?.message).toBe('string');
    const wrongKey = await getJson(`${sim.url}/compat/v1/models`, OPENAI_AUTH);
    expect(wrongKey.status).toBe(401);
  });
});
