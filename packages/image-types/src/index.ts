/** The image types the API accepts as sources and returns (spec 2.4 and section 8); nothing else. */
export type ImageMimeType = 'image/png' | 'image/jpeg' | 'image/webp';
export const IMAGE_MIME_TYPES: readonly ImageMimeType[] = ['image/png', 'image/jpeg', 'image/webp'];

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function ascii(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}

/**
 * What the bytes are by their magic numbers, whatever anyone declared: the PNG signature followed
 * by its IHDR chunk, the JPEG SOI marker followed by another marker, or a RIFF container of type
 * WEBP holding a VP8 chunk. Used on client uploads (gateway) and on provider answers (media).
 */
export function sniffImageType(bytes: Uint8Array): ImageMimeType | undefined {
  if (bytes.length >= 16 && PNG_SIGNATURE.every((b, i) => bytes[i] === b) && ascii(bytes, 12, 16) === 'IHDR') return 'image/png';
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 16 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP' && ascii(bytes, 12, 15) === 'VP8') {
    return 'image/webp';
  }
  return undefined;
}
