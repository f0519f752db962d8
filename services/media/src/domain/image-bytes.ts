/** The encodings media hands back; the public API promises nothing else. */
export type ImageMimeType = 'image/png' | 'image/jpeg' | 'image/webp';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function ascii(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}

/**
 * What the bytes are by their magic numbers (PNG signature and IHDR, JPEG SOI, RIFF/WEBP with a
 * VP8 chunk), whatever a provider claimed: a provider's declared type or a download's
 * content-type can be wrong, the answer's `mime_type` must not be.
 */
export function sniffImageType(bytes: Uint8Array): ImageMimeType | undefined {
  if (bytes.length >= 16 && PNG_SIGNATURE.every((b, i) => bytes[i] === b) && ascii(bytes, 12, 16) === 'IHDR') return 'image/png';
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 16 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP' && ascii(bytes, 12, 15) === 'VP8') {
    return 'image/webp';
  }
  return undefined;
}
