import { beforeAll, describe, expect, it } from 'vitest';
import { encodeSolidJpeg } from '../src/media/jpeg.ts';
import { encodeSolidPng } from '../src/media/png.ts';
import {
  decodeImageHeader,
  getJson,
  GOOGLE_AUTH,
  type J,
  list,
  mp4Boxes,
  parseSse,
  postJson,
  type RunningSimulator,
  startSimulator,
} from './support.ts';

let sim: RunningSimulator;
let base: string;

beforeAll(async () => {
  sim = await startSimulator();
  base = `${sim.url}/google/v1beta`;
  return () => sim.close();
});

const WEATHER_TOOLS = [
  {
    functionDeclarations: [
      {
        name: 'get_weather',
        description: 'Weather',
        parameters: { type: 'OBJECT', properties: { location: { type: 'STRING' }, days: { type: 'INTEGER' } } },
      },
    ],
  },
];

function userText(text: string): J[] {
  return [{ role: 'user', parts: [{ text }] }] as unknown as J[];
}

describe('Gemini models', () => {
  it('lists models with pagination and generation methods', async () => {
    const first = await getJson(`${base}/models?pageSize=2`, GOOGLE_AUTH);
    expect(first.status).toBe(200);
    expect(list(first.body.models).map((m) => m.name)).toEqual(['models/gemini-sim-flash', 'models/gemini-sim-image']);
    expect(list(first.body?.models?.[0]?.supportedGenerationMethods)).toContain('generateContent');
    const token = String(first.body.nextPageToken);
    const second = await getJson(`${base}/models?pageSize=2&pageToken=${token}`, GOOGLE_AUTH);
    const veo = list(second.body.models)[0]!;
    expect(veo.name).toBe('models/veo-sim');
    expect(list(veo.supportedGenerationMethods)).toEqual(['predictLongRunning']);
    expect(second.body.nextPageToken).toBeUndefined();
    const one = await getJson(`${base}/models/gemini-sim-flash`, GOOGLE_AUTH);
    expect(one.body.name).toBe('models/gemini-sim-flash');
  });

  it('accepts ?key= and rejects wrong keys with 401 in Google shape', async () => {
    expect((await getJson(`${base}/models?key=sim-google-key`)).status).toBe(200);
    const wrong = await getJson(`${base}/models`, { 'x-goog-api-key': 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.body?.error?.code).toBe(401);
    expect(wrong.body?.error?.status).toBe('UNAUTHENTICATED');
  });
});

describe('Gemini generateContent', () => {
  it('answers text with usageMetadata matching countTokens', async () => {
    const body = { contents: userText('Hello Gemini'), systemInstruction: { parts: [{ text: 'be nice' }] } };
    const res = await postJson(`${base}/models/gemini-sim-flash:generateContent`, body, GOOGLE_AUTH);
    expect(res.status).toBe(200);
    const candidate = res.body?.candidates?.[0];
    expect(candidate?.content?.role).toBe('model');
    expect(String(candidate?.content?.parts?.[0]?.text)).toMatch(/^Simulated reply to: Hello Gemini\./);
    expect(candidate?.finishReason).toBe('STOP');
    const usage = res.body.usageMetadata;
    expect(usage?.totalTokenCount).toBe(Number(usage?.promptTokenCount) + Number(usage?.candidatesTokenCount));
    const count = await postJson(`${base}/models/gemini-sim-flash:countTokens`, body, GOOGLE_AUTH);
    expect(count.body?.totalTokens).toBe(usage?.promptTokenCount);
    const wrapped = await postJson(
      `${base}/models/gemini-sim-flash:countTokens`,
      { generateContentRequest: { model: 'models/gemini-sim-flash', ...body } },
      GOOGLE_AUTH,
    );
    expect(wrapped.body?.totalTokens).toBe(usage?.promptTokenCount);
    const withTools = await postJson(`${base}/models/gemini-sim-flash:countTokens`, { ...body, tools: WEATHER_TOOLS }, GOOGLE_AUTH);
    expect(Number(withTools.body?.totalTokens)).toBeGreaterThan(Number(usage?.promptTokenCount));
  });

  it('stops with MAX_TOKENS', async () => {
    const res = await postJson(
      `${base}/models/gemini-sim-flash:generateContent`,
      { contents: userText('Long please'), generationConfig: { maxOutputTokens: 4 } },
      GOOGLE_AUTH,
    );
    expect(res.body?.candidates?.[0]?.finishReason).toBe('MAX_TOKENS');
    expect(res.body?.usageMetadata?.candidatesTokenCount).toBe(4);
  });

  it('answers a functionCall and reads a functionResponse', async () => {
    const res = await postJson(
      `${base}/models/gemini-sim-flash:generateContent`,
      { contents: userText('weather in Lima?'), tools: WEATHER_TOOLS },
      GOOGLE_AUTH,
    );
    const call = res.body?.candidates?.[0]?.content?.parts?.[0]?.functionCall;
    expect(call?.name).toBe('get_weather');
    expect(call?.args).toEqual({ location: 'Paris', days: 1 });
    const followUp = await postJson(
      `${base}/models/gemini-sim-flash:generateContent`,
      {
        tools: WEATHER_TOOLS,
        contents: [
          { role: 'user', parts: [{ text: 'weather in Lima?' }] },
          { role: 'model', parts: [{ functionCall: call }] },
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { forecast: 'foggy' } } }] },
        ],
      },
      GOOGLE_AUTH,
    );
    expect(String(followUp.body?.candidates?.[0]?.content?.parts?.[0]?.text)).toContain('foggy');
  });

  it('streams SSE chunks separated by CRLF with usage on the last', async () => {
    const res = await fetch(`${base}/models/gemini-sim-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...GOOGLE_AUTH },
      body: JSON.stringify({ contents: userText('Stream Gemini') }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text).toContain('\r\n\r\n');
    const chunks = parseSse(text).map((e) => JSON.parse(e.data) as J);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    const joined = chunks.map((c) => String(c?.candidates?.[0]?.content?.parts?.[0]?.text)).join('');
    expect(joined).toMatch(/^Simulated reply to: Stream Gemini\./);
    expect(chunks.slice(0, -1).every((c) => c.usageMetadata === undefined)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(Number(last?.usageMetadata?.candidatesTokenCount)).toBeGreaterThan(0);
  });

  it('answers streamGenerateContent without alt=sse as a JSON array', async () => {
    const res = await postJson(`${base}/models/gemini-sim-flash:streamGenerateContent`, { contents: userText('array') }, GOOGLE_AUTH);
    expect(Array.isArray(res.body)).toBe(true);
    expect(list(res.body).at(-1)!.usageMetadata).toBeDefined();
  });

  it.each([
    ['image/png', 'png'],
    ['image/jpeg', 'jpeg'],
    ['image/webp', 'webp'],
  ] as const)('generates a %s image as inlineData', async (mimeType, format) => {
    const res = await postJson(
      `${base}/models/gemini-sim-image:generateContent`,
      {
        contents: userText('a lighthouse'),
        generationConfig: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9', imageOutputOptions: { mimeType } } },
      },
      GOOGLE_AUTH,
    );
    expect(res.status).toBe(200);
    const parts = list(res.body?.candidates?.[0]?.content?.parts);
    const inline = parts.find((p) => p.inlineData !== undefined)!.inlineData;
    expect(inline?.mimeType).toBe(mimeType);
    expect(decodeImageHeader(Buffer.from(String(inline?.data), 'base64'))).toEqual({ format, width: 1344, height: 768 });
    expect(parts.some((p) => typeof p.text === 'string')).toBe(true);
    expect(list(res.body.usageMetadata?.candidatesTokensDetails)[0]?.modality).toBe('IMAGE');
  });

  it('edits an inline image keeping its size, IMAGE-only modality has no text', async () => {
    const source = encodeSolidJpeg(400, 300, [50, 60, 70]).toString('base64');
    const res = await postJson(
      `${base}/models/gemini-sim-image:generateContent`,
      {
        contents: [{ role: 'user', parts: [{ text: 'make it night' }, { inlineData: { mimeType: 'image/jpeg', data: source } }] }],
        generationConfig: { responseModalities: ['IMAGE'] },
      },
      GOOGLE_AUTH,
    );
    const parts = list(res.body?.candidates?.[0]?.content?.parts);
    expect(parts).toHaveLength(1);
    expect(decodeImageHeader(Buffer.from(String(parts[0]?.inlineData?.data), 'base64'))).toEqual({ format: 'png', width: 400, height: 300 });
  });

  it('streams an image model: text deltas, then every image in the last chunk', async () => {
    const res = await fetch(`${base}/models/gemini-sim-image:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...GOOGLE_AUTH },
      body: JSON.stringify({ contents: userText('two boats'), generationConfig: { candidateCount: 2 } }),
    });
    const chunks = parseSse(await res.text()).map((e) => JSON.parse(e.data) as J);
    const last = chunks.at(-1);
    const candidates = list(last?.candidates);
    expect(candidates).toHaveLength(2);
    for (const c of candidates) {
      const inline = list(c.content?.parts).find((p) => p.inlineData !== undefined)?.inlineData;
      expect(decodeImageHeader(Buffer.from(String(inline?.data), 'base64')).format).toBe('png');
    }
    expect(last?.usageMetadata?.candidatesTokensDetails).toBeDefined();
  });

  it('refuses IMAGE output from a text model and unknown models', async () => {
    const res = await postJson(
      `${base}/models/gemini-sim-flash:generateContent`,
      { contents: userText('x'), generationConfig: { responseModalities: ['IMAGE'] } },
      GOOGLE_AUTH,
    );
    expect(res.status).toBe(400);
    expect(res.body?.error?.status).toBe('INVALID_ARGUMENT');
    const unknown = await postJson(`${base}/models/gemini-nope:generateContent`, { contents: userText('x') }, GOOGLE_AUTH);
    expect(unknown.status).toBe(404);
    expect(unknown.body?.error?.status).toBe('NOT_FOUND');
  });
});

async function pollOperation(name: string): Promise<J> {
  for (;;) {
    const res = await getJson(`${base}/${name}`, GOOGLE_AUTH);
    expect(res.status).toBe(200);
    if (String(res.body.done) === 'true') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Veo videos', () => {
  it('runs predictLongRunning with first and last frames to a downloadable MP4', async () => {
    const frame = { inlineData: { mimeType: 'image/png', data: encodeSolidPng(1280, 720, [1, 2, 3]).toString('base64') } };
    const created = await postJson(
      `${base}/models/veo-sim:predictLongRunning`,
      {
        instances: [{ prompt: 'a sunrise', image: frame, lastFrame: frame }],
        parameters: { aspectRatio: '9:16', durationSeconds: 6 },
      },
      GOOGLE_AUTH,
    );
    expect(created.status).toBe(200);
    const name = String(created.body.name);
    expect(name).toMatch(/^operations\/.+/);
    const first = await getJson(`${base}/${name}`, GOOGLE_AUTH);
    expect(first.body.done).toBe(false);

    const done = await pollOperation(name);
    expect(done.error).toBeUndefined();
    const uri = String(list(done.response?.generateVideoResponse?.generatedSamples)[0]?.video?.uri);
    expect(uri).toMatch(/\/google\/v1beta\/files\/.+:download\?alt=media$/);
    expect((await fetch(uri)).status).toBe(401);
    const video = await fetch(uri, { headers: GOOGLE_AUTH });
    expect(video.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await video.arrayBuffer());
    expect(mp4Boxes(bytes)[0]).toBe('ftyp');
    const partial = await fetch(uri, { headers: { ...GOOGLE_AUTH, range: 'bytes=10-19' } });
    expect(partial.status).toBe(206);
    expect(Buffer.from(await partial.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true);
    const sameViaModelPath = await getJson(`${base}/models/veo-sim/${name}`, GOOGLE_AUTH);
    expect(sameViaModelPath.body.done).toBe(true);
  });

  it('accepts Vertex-style bytesBase64Encoded frames and rejects invalid ones', async () => {
    const ok = await postJson(
      `${base}/models/veo-sim:predictLongRunning`,
      {
        instances: [{ prompt: 'p', image: { bytesBase64Encoded: encodeSolidPng(8, 8, [0, 0, 0]).toString('base64'), mimeType: 'image/png' } }],
      },
      GOOGLE_AUTH,
    );
    expect(ok.status).toBe(200);
    const bad = await postJson(
      `${base}/models/veo-sim:predictLongRunning`,
      { instances: [{ prompt: 'p', lastFrame: { inlineData: { mimeType: 'image/png', data: 'AAAA' } } }] },
      GOOGLE_AUTH,
    );
    expect(bad.status).toBe(400);
    expect(bad.body?.error?.status).toBe('INVALID_ARGUMENT');
  });
});
