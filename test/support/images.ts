import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { pngChunk } from '../../services/provider-simulator/src/media/png.ts';

/** A real greyscale PNG of random pixels: it does not compress, so its size follows its dimensions. */
export function noisePng(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  const rows = randomBytes((width + 1) * height);
  for (let y = 0; y < height; y++) rows[y * (width + 1)] = 0;
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(rows, { level: 0 })), pngChunk('IEND', Buffer.alloc(0))]);
}
