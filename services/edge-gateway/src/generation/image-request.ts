import { GatewayError } from '@gw/errors';
import { MAX_PROMPT_CHARS, type ImageEditBody, type ImageGenerationBody, type OUTPUT_FORMATS } from '../schemas/media.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { decodeImageInput, MAX_IMAGE_INPUT_JSON_BYTES, type DecodedImage, type ImageMimeType } from './image-input.ts';

/** The JSON text of the longest valid prompt: every character an escaped surrogate pair (`\ud83d\ude00`). */
const MAX_PROMPT_JSON_BYTES = MAX_PROMPT_CHARS * 12;
/** Room for the small fields and any whitespace around them. */
const FIELDS_JSON_BYTES = 64 * 1024;
/** Base64 written with escaped slashes (`\/`, some JSON encoders do) grows by about 1/64. */
const ESCAPED_SLASHES_BYTES = Math.ceil(MAX_IMAGE_INPUT_JSON_BYTES / 64);

/**
 * Body limits sized to the largest valid request, so anything larger is refused from its
 * Content-Length (or as soon as a chunked body passes the limit) instead of being buffered whole.
 */
export const GENERATION_BODY_LIMIT = MAX_PROMPT_JSON_BYTES + FIELDS_JSON_BYTES;
export const EDIT_BODY_LIMIT = MAX_IMAGE_INPUT_JSON_BYTES + ESCAPED_SLASHES_BYTES + MAX_PROMPT_JSON_BYTES + FIELDS_JSON_BYTES;

/** What a body too large or not JSON is told on `/images/edits`: the rule it broke, and the form to send. */
export const EDIT_BODY_HELP = {
  tooLarge:
    'The request body is larger than any valid image edit: its source image may be at most 8 MB (8388608 bytes) decoded (spec 8). Send a smaller image.',
  notJson:
    '/images/edits takes a JSON body (Content-Type: application/json), not multipart/form-data: send the source image as the JSON `image` field, ' +
    'e.g. {"model":"<image model>","prompt":"<edit instruction>","image":{"data_url":"data:image/png;base64,<base64>"}} ' +
    'or "image":{"b64_json":"<base64>","mime_type":"image/png"}.',
};

const MIME_OF: Record<(typeof OUTPUT_FORMATS)[number], ImageMimeType> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

/** An `/images/generations` body as the gateway goes on with it. */
export interface ImageGenerationRequest {
  model: string;
  prompt: string;
  n: number;
  /** `<width>x<height>`; undefined for the model's default. */
  size: string | undefined;
  outputMimeType: ImageMimeType | undefined;
}

/** An `/images/edits` body, its source image decoded. */
export interface ImageEditRequest extends ImageGenerationRequest {
  image: DecodedImage;
}

/** Step 4 for `/images/generations` (spec 4.7), after its schema: defaults filled in. */
export function generationRequestOf(body: ImageGenerationBody): ImageGenerationRequest {
  return {
    model: body.model,
    prompt: body.prompt,
    n: body.n ?? 1,
    size: body.size ?? undefined,
    outputMimeType: body.output_format ? MIME_OF[body.output_format] : undefined,
  };
}

/** Step 4 for `/images/edits` (spec 4.8), after its schema: the source image decoded (spec 2.4). */
export function editRequestOf(body: ImageEditBody): ImageEditRequest {
  return { ...generationRequestOf(body), image: decodeImageInput(body.image, 'image') };
}

/** A size the model does not declare (when it declares any) is the request's fault. */
export function assertSizeFits(size: string | undefined, model: ResolvedModel): void {
  const sizes = model.limits.imageSizes;
  if (size === undefined || sizes.length === 0 || sizes.includes(size)) return;
  throw new GatewayError('invalid_request', `Invalid request: size ${size} is not offered by ${model.id}; use one of ${sizes.join(', ')}.`);
}
