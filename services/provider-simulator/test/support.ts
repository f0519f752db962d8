import type { AddressInfo } from 'node:net';
import { inflateSync } from 'node:zlib';
import { buildSimulator, type SimulatorOptions } from '../src/index.ts';

/**
 * A JSON value read loosely in assertions: any property may be accessed and yields another `J`, so
 * tests can write `body.error.type` without casts. Use `list()` to iterate arrays.
 */
export interface J {
  readonly [key: string]: J;
}

export function list(value: J | undefined): J[] {
  return Array.isArray(value) ? (value as J[]) : [];
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: J;
  text: string;
}

export interface RunningSimulator {
  url: string;
  close(): Promise<void>;
}

/** Starts a simulator on a free port. Video jobs finish after 300 ms so tests stay fast. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const app = buildSimulator({ videoDelayMs: 300, ...opts });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

export const OPENAI_AUTH = { authorization: 'Bearer sim-openai-key' };
export const COMPAT_AUTH = { authorization: 'Bearer sim-compat-key' };
export const ANTHROPIC_AUTH = { 'x-api-key': 'sim-anthropic-key', 'anthropic-version': '2023-06-01' };
export const GOOGLE_AUTH = { 'x-goog-api-key': 'sim-google-key' };

/** POST JSON and return status, headers and parsed body (or raw text when not JSON). */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<HttpResult> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal,
  });
  return readResponse(res);
}

export async function getJson(url: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  return readResponse(await fetch(url, { headers }));
}

async function readResponse(res: Response): Promise<HttpResult> {
  const text = await res.text();
  let body: J = {};
  try {
    body = JSON.parse(text) as J;
  } catch {
    // Not JSON (a stream, a malformed-body fault): callers read `text`.
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Calls the simulator's control API. */
export async function control(base: string, method: string, path: string, body?: unknown): Promise<J> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as J;
  if (!res.ok) throw new Error(`control ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export interface SseEvent {
  event?: string;
  data: string;
}

/** A spec-following SSE parser (LF or CRLF line ends), independent of the simulator's own writer. */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r\n\r\n|\n\n/)) {
    if (block.trim() === '') continue;
    const event: SseEvent = { data: '' };
    const data: string[] = [];
    for (const line of block.split(/\r\n|\n/)) {
      if (line.startsWith('event:')) event.event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    event.data = data.join('\n');
    events.push(event);
  }
  return events;
}

/**
 * Format and dimensions read straight from the file headers (independently of src/media/sniff.ts).
 * PNGs are also fully inflated to check the pixel data has the right size.
 */
export function decodeImageHeader(bytes: Buffer): { format: string; width: number; height: number } {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    const width = bytes.readUInt32BE(16);
    const height = bytes.readUInt32BE(20);
    const bitDepth = bytes[24]!;
    const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[bytes[25]! as 0 | 2 | 3 | 4 | 6];
    const idat: Buffer[] = [];
    for (let i = 8; i < bytes.length; ) {
      const len = bytes.readUInt32BE(i);
      if (bytes.toString('latin1', i + 4, i + 8) === 'IDAT') idat.push(bytes.subarray(i + 8, i + 8 + len));
      i += 12 + len;
    }
    const raw = inflateSync(Buffer.concat(idat));
    const rowBytes = 1 + Math.ceil((width * channels * bitDepth) / 8);
    if (raw.length !== rowBytes * height) throw new Error('PNG pixel data has the wrong size');
    return { format: 'png', width, height };
  }
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    for (let i = 2; i < bytes.length; ) {
      const marker = bytes[i + 1]!;
      if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2) {
        return { format: 'jpeg', height: bytes.readUInt16BE(i + 5), width: bytes.readUInt16BE(i + 7) };
      }
      i += 2 + bytes.readUInt16BE(i + 2);
    }
    throw new Error('JPEG without a frame header');
  }
  if (bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 16) === 'WEBPVP8L') {
    if (bytes.readUInt32LE(4) !== bytes.length - 8) throw new Error('RIFF size mismatch');
    const bits = bytes.readUInt32LE(21);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  throw new Error(`unknown image format: ${bytes.subarray(0, 12).toString('hex')}`);
}

/** Reads the top-level MP4 box types. */
export function mp4Boxes(bytes: Buffer): string[] {
  const boxes: string[] = [];
  for (let i = 0; i + 8 <= bytes.length; ) {
    const size = bytes.readUInt32BE(i);
    boxes.push(bytes.toString('latin1', i + 4, i + 8));
    if (size < 8) break;
    i += size;
  }
  return boxes;
}
