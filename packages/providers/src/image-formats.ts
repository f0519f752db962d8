import type { ImageMimeType } from './types.ts';

/** OpenAI `output_format` names per MIME type. */
export const FORMAT_BY_MIME: Record<ImageMimeType, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/webp': 'webp',
};

export const MIME_BY_FORMAT: Record<string, ImageMimeType> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

/** A file name for an upload of this type (providers look at the extension). */
export function fileNameFor(base: string, mimeType: string): string {
  const format = (FORMAT_BY_MIME as Record<string, string | undefined>)[mimeType] ?? 'png';
  return `${base}.${format}`;
}

/** Bytes as an upload part, typed as the MIME type says. */
export function blobOf(bytes: Uint8Array, mimeType: string): Blob {
  return new Blob([new Uint8Array(bytes)], { type: mimeType });
}
