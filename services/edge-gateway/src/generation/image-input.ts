import { GatewayError } from '@gw/errors';
import { IMAGE_MIME_TYPES, sniffImageType, type ImageMimeType } from '@gw/image-types';

export type { ImageMimeType } from '@gw/image-types';

/** Spec 8: at most 8 MB decoded per source image (MB = 1024 x 1024 bytes). */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
/** Base64 of the largest valid image: 4 characters per 3 bytes, padded. */
export const MAX_IMAGE_BASE64_CHARS = 4 * Math.ceil(MAX_IMAGE_BYTES / 3);
/** JSON text of the largest valid ImageInput: a data URL (the longer form) plus its field names. */
export const MAX_IMAGE_INPUT_JSON_BYTES = MAX_IMAGE_BASE64_CHARS + 'data:image/jpeg;base64,'.length + 64;

/** A decoded source image whose bytes are what its declared type says. */
export interface DecodedImage {
  bytes: Buffer;
  mimeType: ImageMimeType;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([^;,]*);base64,/i;
const KINDS = 'image/png, image/jpeg or image/webp';

function invalid(message: string): GatewayError {
  return new GatewayError('invalid_request', message);
}

function isImageMimeType(value: unknown): value is ImageMimeType {
  return typeof value === 'string' && (IMAGE_MIME_TYPES as readonly string[]).includes(value);
}

/** The declared type and the base64 text, from either form of spec 2.4. */
function declared(input: Record<string, unknown>, field: string): { mimeType: ImageMimeType; base64: string } {
  const { b64_json: b64, data_url: dataUrl, mime_type: mimeType } = input;
  if (b64 !== undefined && dataUrl !== undefined) throw invalid(`${field}: give either b64_json (with mime_type) or data_url, not both.`);
  if (mimeType !== undefined && !isImageMimeType(mimeType)) throw invalid(`${field}.mime_type must be ${KINDS}.`);
  if (b64 !== undefined) {
    if (typeof b64 !== 'string') throw invalid(`${field}.b64_json must be a base64 string.`);
    if (mimeType === undefined) throw invalid(`${field}.mime_type is required with b64_json (${KINDS}).`);
    return { mimeType, base64: b64 };
  }
  if (dataUrl === undefined) throw invalid(`${field} needs b64_json (with mime_type) or data_url.`);
  if (typeof dataUrl !== 'string') throw invalid(`${field}.data_url must be a string.`);
  const match = DATA_URL.exec(dataUrl);
  if (!match) throw invalid(`${field}.data_url must have the form data:<mime type>;base64,<data>.`);
  const urlType = match[1]!.toLowerCase();
  if (!isImageMimeType(urlType)) throw invalid(`${field}.data_url must be of type ${KINDS}.`);
  if (mimeType !== undefined && mimeType !== urlType) throw invalid(`${field}.mime_type (${mimeType}) contradicts its data_url (${urlType}).`);
  return { mimeType: urlType, base64: dataUrl.slice(match[0].length) };
}

/**
 * Decodes an ImageInput (spec 2.4): `b64_json` + `mime_type`, or a `data:` URL. Refused with a
 * message naming `field`: any other shape or type, text that is not standard base64, more than
 * 8 MB decoded (judged from the length, before decoding), and bytes that are not an image of the
 * declared type.
 */
export function decodeImageInput(value: unknown, field: string): DecodedImage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`${field} must be an object with b64_json and mime_type, or data_url.`);
  }
  const { mimeType, base64 } = declared(value as Record<string, unknown>, field);
  if (base64 === '') throw invalid(`${field} is empty.`);
  const unpadded = base64.replace(/=+$/, '');
  if (!BASE64.test(base64) || unpadded.length % 4 === 1) throw invalid(`${field} is not standard base64 (A-Z, a-z, 0-9, +, /; no line breaks).`);
  if (Math.floor((unpadded.length * 3) / 4) > MAX_IMAGE_BYTES) throw invalid(`${field} is larger than 8 MB (${MAX_IMAGE_BYTES} bytes) decoded.`);
  const bytes = Buffer.from(base64, 'base64');
  const actual = sniffImageType(bytes);
  if (actual === undefined) throw invalid(`${field} is not a PNG, JPEG or WebP image.`);
  if (actual !== mimeType) throw invalid(`${field} is a ${actual} image but is declared as ${mimeType}.`);
  return { bytes, mimeType };
}
