/** Image references: data URLs ↔ base64 sources, and a media type for bare URLs. */
import type { ImagePart, ImageSource } from './ir.ts';

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

/** An image part from a URL as chat and responses carry it: `data:` URLs become base64 sources. */
export function imageFromUrl(url: string, detail: string | undefined): ImagePart {
  const match = DATA_URL.exec(url);
  const source: ImageSource =
    match && match[1] !== undefined && match[2] !== undefined
      ? { kind: 'base64', mediaType: match[1], data: match[2] }
      : { kind: 'url', url };
  return detail === undefined ? { type: 'image', source } : { type: 'image', source, detail };
}

/** The URL form chat and responses need: base64 sources as a `data:` URL. */
export function imageUrl(source: ImageSource): string {
  return source.kind === 'base64' ? `data:${source.mediaType};base64,${source.data}` : source.url;
}

const EXTENSION_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
};

/** gemini `fileData` requires a mime type that a bare URL lacks; guess it from the extension. */
export function mediaTypeOf(source: ImageSource): string {
  if (source.kind === 'base64' || source.mediaType !== undefined) return source.mediaType ?? 'image/jpeg';
  const path = source.url.split(/[?#]/, 1)[0] ?? '';
  const ext = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  return EXTENSION_TYPES[ext] ?? 'image/jpeg';
}
