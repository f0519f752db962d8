import type { ImageFormat } from './images.ts';

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
}

/** Identifies a PNG, JPEG or WebP by its magic bytes and reads its dimensions from the headers. */
export function sniffImage(bytes: Uint8Array): ImageInfo | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length >= 24 && buf.readUInt32BE(0) === 0x89504e47 && buf.toString('latin1', 12, 16) === 'IHDR') {
    return { format: 'png', width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  }
  if (buf.length >= 4 && buf[0] === 0xff && buf[1] === 0xd8) return sniffJpeg(buf);
  if (buf.length >= 30 && buf.toString('latin1', 0, 4) === 'RIFF' && buf.toString('latin1', 8, 12) === 'WEBP') {
    return sniffWebp(buf);
  }
  return undefined;
}

function sniffJpeg(buf: Buffer): ImageInfo | undefined {
  let i = 2;
  while (i + 9 < buf.length) {
    if (buf[i] !== 0xff) return undefined;
    const marker = buf[i + 1]!;
    if (marker === 0xff) {
      i++;
      continue;
    }
    // SOFn markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { format: 'jpeg', height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
    }
    i += 2 + buf.readUInt16BE(i + 2);
  }
  return undefined;
}

function sniffWebp(buf: Buffer): ImageInfo | undefined {
  const chunk = buf.toString('latin1', 12, 16);
  if (chunk === 'VP8L' && buf[20] === 0x2f) {
    const bits = buf.readUInt32LE(21);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8 ') {
    return { format: 'webp', width: buf.readUInt16LE(26) & 0x3fff, height: buf.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8X') {
    return { format: 'webp', width: buf.readUIntLE(24, 3) + 1, height: buf.readUIntLE(27, 3) + 1 };
  }
  return undefined;
}

/** Decodes base64 (or a `data:` URL) and sniffs it; undefined when it is not a supported image. */
export function decodeImageInput(data: string): { bytes: Buffer; info: ImageInfo } | undefined {
  const comma = data.startsWith('data:') ? data.indexOf(',') : -1;
  const bytes = Buffer.from(comma >= 0 ? data.slice(comma + 1) : data, 'base64');
  const info = sniffImage(bytes);
  return info ? { bytes, info } : undefined;
}
