import { fnv1a } from '../hash.ts';
import { encodeSolidJpeg } from './jpeg.ts';
import { encodeSolidPng, type Rgb } from './png.ts';
import { encodeSolidWebp } from './webp.ts';

export type ImageFormat = 'png' | 'jpeg' | 'webp';

export const MIME_TYPES: Record<ImageFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

export const FILE_EXTENSIONS: Record<ImageFormat, string> = { png: 'png', jpeg: 'jpg', webp: 'webp' };

export const MAX_IMAGE_SIDE = 4096;

const PALETTE: readonly Rgb[] = [
  [66, 133, 244],
  [219, 68, 55],
  [244, 180, 0],
  [15, 157, 88],
  [171, 71, 188],
  [0, 172, 193],
  [255, 112, 67],
  [93, 64, 55],
];

export function formatFromMime(mime: string): ImageFormat | undefined {
  switch (mime.toLowerCase()) {
    case 'image/png':
      return 'png';
    case 'image/jpeg':
    case 'image/jpg':
      return 'jpeg';
    case 'image/webp':
      return 'webp';
    default:
      return undefined;
  }
}

/** A palette colour chosen deterministically from the prompt and the image's position in the answer. */
export function colorIndexFor(prompt: string, index: number): number {
  return (fnv1a(prompt) + index) % PALETTE.length;
}

export interface RenderedImage {
  bytes: Buffer;
  base64: string;
  mimeType: string;
}

const CACHE_LIMIT = 64;
const cache = new Map<string, RenderedImage>();

/**
 * The encoded image for a recipe. Encoding happens once per (format, size, colour): answers are served
 * from this small LRU so image requests cost no encoding under load.
 */
export function renderImage(format: ImageFormat, width: number, height: number, colorIndex: number): RenderedImage {
  const key = `${format}:${width}x${height}:${colorIndex}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const color = PALETTE[colorIndex % PALETTE.length]!;
  const bytes =
    format === 'png'
      ? encodeSolidPng(width, height, color)
      : format === 'jpeg'
        ? encodeSolidJpeg(width, height, color)
        : encodeSolidWebp(width, height, color);
  const image = { bytes, base64: bytes.toString('base64'), mimeType: MIME_TYPES[format] };
  cache.set(key, image);
  if (cache.size > CACHE_LIMIT) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  return image;
}

/** `WIDTHxHEIGHT` within 1..MAX_IMAGE_SIDE, or undefined. */
export function parseSize(size: string): { width: number; height: number } | undefined {
  const m = /^(\d{1,5})x(\d{1,5})$/.exec(size.trim());
  if (!m) return undefined;
  const width = Number(m[1]);
  const height = Number(m[2]);
  if (width < 1 || height < 1 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) return undefined;
  return { width, height };
}
