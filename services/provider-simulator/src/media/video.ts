import { readFileSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AspectRatio } from '../videos/jobs.ts';
import { parseRange } from './range.ts';

/**
 * Real H.264 MP4 clips (fixtures made once with ffmpeg, see fixtures/README.md), one per aspect ratio
 * and duration. Loaded once at start: together they are under 200 KB.
 */
export interface VideoFile {
  name: string;
  bytes: Buffer;
  etag: string;
  seconds: number;
}

const FIXTURE_SECONDS = [4, 6, 8, 12] as const;
const FIXTURES_DIR = new URL('../../fixtures/', import.meta.url);
const LAST_MODIFIED = new Date().toUTCString();

function load(aspect: AspectRatio, seconds: number): VideoFile {
  const name = `video-${aspect === '16:9' ? '16x9' : '9x16'}-${seconds}s.mp4`;
  const bytes = readFileSync(new URL(name, FIXTURES_DIR));
  return { name, bytes, etag: `"${name}-${bytes.length}"`, seconds };
}

const FILES: Record<AspectRatio, VideoFile[]> = {
  '16:9': FIXTURE_SECONDS.map((s) => load('16:9', s)),
  '9:16': FIXTURE_SECONDS.map((s) => load('9:16', s)),
};

/** The clip closest to the requested duration. */
export function videoFor(aspect: AspectRatio, seconds: number): VideoFile {
  let best = FILES[aspect][0]!;
  for (const file of FILES[aspect]) {
    if (Math.abs(file.seconds - seconds) < Math.abs(best.seconds - seconds)) best = file;
  }
  return best;
}

/** Sends an MP4 with single-range support: 206 + Content-Range, or 416 when unsatisfiable. */
export function sendMp4(request: FastifyRequest, reply: FastifyReply, file: VideoFile): FastifyReply {
  const size = file.bytes.length;
  reply.header('accept-ranges', 'bytes').header('etag', file.etag).header('last-modified', LAST_MODIFIED);
  const ifRange = request.headers['if-range'];
  const rangeHeader = ifRange === undefined || ifRange === file.etag ? request.headers.range : undefined;
  const range = parseRange(rangeHeader, size);
  if (range.kind === 'unsatisfiable') {
    return reply.code(416).header('content-range', `bytes */${size}`).type('video/mp4').send(Buffer.alloc(0));
  }
  if (range.kind === 'partial') {
    return reply
      .code(206)
      .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
      .type('video/mp4')
      .send(file.bytes.subarray(range.start, range.end + 1));
  }
  return reply.code(200).type('video/mp4').send(file.bytes);
}
