import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDirectives, stripDirectives } from '../src/directives.ts';
import { splitDeltas } from '../src/engine.ts';
import { parseFault } from '../src/faults.ts';
import { encodeSolidJpeg } from '../src/media/jpeg.ts';
import { encodeSolidPng } from '../src/media/png.ts';
import { parseRange } from '../src/media/range.ts';
import { sniffImage } from '../src/media/sniff.ts';
import { encodeSolidWebp } from '../src/media/webp.ts';
import { parseMultipart } from '../src/multipart.ts';
import { sampleArguments } from '../src/tool-args.ts';
import { countTokens } from '../src/tokens.ts';
import { decodeImageHeader } from './support.ts';

function hasIdentify(): boolean {
  try {
    execFileSync('identify', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const ENCODERS = { png: encodeSolidPng, jpeg: encodeSolidJpeg, webp: encodeSolidWebp } as const;
const SIZES: Array<[number, number]> = [
  [1, 1],
  [13, 7],
  [1024, 1024],
  [1536, 1024],
  [1344, 768],
];

describe('image encoders', () => {
  for (const [format, encode] of Object.entries(ENCODERS)) {
    it(`${format} headers carry the requested size`, () => {
      for (const [width, height] of SIZES) {
        const bytes = encode(width, height, [200, 100, 50]);
        expect(decodeImageHeader(bytes)).toEqual({ format, width, height });
        expect(sniffImage(bytes)).toEqual({ format, width, height });
      }
    });
  }

  // A real decoder, where the machine has one (ImageMagick is installed on developer machines).
  it.skipIf(!hasIdentify())('decodes fully with ImageMagick, colour intact', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-img-'));
    for (const [format, encode] of Object.entries(ENCODERS)) {
      const file = join(dir, `x.${format}`);
      writeFileSync(file, encode(37, 21, [200, 100, 50]));
      const out = execFileSync('convert', ['-regard-warnings', file, '-format', '%w %h %[pixel:p{20,10}]', 'info:']).toString();
      const [w, h, pixel] = out.split(' ');
      expect([w, h]).toEqual(['37', '21']);
      const rgb = /\((\d+),(\d+),(\d+)\)/.exec(pixel ?? '')!.slice(1).map(Number);
      [200, 100, 50].forEach((v, i) => expect(Math.abs(rgb[i]! - v)).toBeLessThanOrEqual(2));
    }
  });
});

describe('range parsing', () => {
  it('handles the single-range forms', () => {
    expect(parseRange(undefined, 100)).toEqual({ kind: 'full' });
    expect(parseRange('bytes=0-9', 100)).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(parseRange('bytes=90-', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-5', 100)).toEqual({ kind: 'partial', start: 95, end: 99 });
    expect(parseRange('bytes=50-500', 100)).toEqual({ kind: 'partial', start: 50, end: 99 });
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=9-3', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('items=1-2', 100)).toEqual({ kind: 'full' });
  });
});

describe('directives', () => {
  it('parses groups, keys and values', () => {
    expect(parseDirectives('hi [[sim:fault=429]] there')).toEqual({ fault: '429' });
    expect(parseDirectives('[[sim: latency=300 ; tool ]] [[sim:words=5;chunk_delay=10]]')).toEqual({
      latencyMs: 300,
      tool: true,
      words: 5,
      chunkDelayMs: 10,
    });
    expect(parseDirectives('[[sim:fault=500]] [[sim:fault=503]]').fault).toBe('503');
    expect(parseDirectives('no directives here')).toEqual({});
    expect(stripDirectives('hello [[sim:fault=429]] world')).toBe('hello world');
  });

  it('knows the fault names', () => {
    expect(parseFault('429')).toEqual({ kind: 'status', status: 429 });
    expect(parseFault('timeout')).toEqual({ kind: 'timeout' });
    expect(parseFault('video_lost')).toEqual({ kind: 'video_lost' });
    expect(parseFault('200')).toBeUndefined();
    expect(parseFault('boom')).toBeUndefined();
  });
});

describe('text helpers', () => {
  it('splits into at least three deltas that rebuild the text', () => {
    for (const text of ['Simulated reply to: hi. Lorem ipsum dolor', 'abc', 'ab', 'one two three four five six seven eight nine ten eleven']) {
      const parts = splitDeltas(text);
      expect(parts.join('')).toBe(text);
      expect(parts.length).toBeGreaterThanOrEqual(Math.min(3, text.length));
    }
  });

  it('counts at least one token and grows with the input', () => {
    expect(countTokens('')).toBe(1);
    expect(countTokens({ messages: ['a'] })).toBeLessThan(countTokens({ messages: ['a'], tools: [{ name: 'x' }] }));
  });

  it('samples tool arguments from a schema', () => {
    expect(
      sampleArguments({
        type: 'object',
        properties: {
          city: { type: 'string' },
          note: { type: 'string' },
          count: { type: 'integer' },
          flag: { type: 'boolean' },
          tags: { type: 'array', items: { type: 'string' } },
          unit: { enum: ['c', 'f'] },
        },
      }),
    ).toEqual({ city: 'Paris', note: 'sim-note', count: 1, flag: true, tags: ['sim-tags'], unit: 'c' });
  });
});

describe('multipart parser', () => {
  it('reads fields and files', async () => {
    const form = new FormData();
    form.set('prompt', 'héllo');
    form.set('image', new Blob([Buffer.from([1, 2, 3, 13, 10, 45, 45])], { type: 'image/png' }), 'a.png');
    const req = new Request('http://x/', { method: 'POST', body: form });
    const body = Buffer.from(await req.arrayBuffer());
    const parsed = parseMultipart(body, req.headers.get('content-type')!);
    expect(parsed.text('prompt')).toBe('héllo');
    const [file] = parsed.files('image');
    expect(file!.filename).toBe('a.png');
    expect(file!.contentType).toBe('image/png');
    expect([...file!.data]).toEqual([1, 2, 3, 13, 10, 45, 45]);
    expect(() => parseMultipart(body, 'multipart/form-data')).toThrow(/boundary/);
  });
});
