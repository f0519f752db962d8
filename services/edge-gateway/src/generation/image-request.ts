import { withinCharacters } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { decodeImageInput, MAX_IMAGE_INPUT_JSON_BYTES, type DecodedImage, type ImageMimeType } from './image-input.ts';

/** Spec 8. */
export const MAX_PROMPT_CHARS = 4000;
export const MAX_IMAGES = 4;

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

const SIZE = /^([1-9]\d{0,4})x([1-9]\d{0,4})$/;
/** OpenAI's `output_format` (an extension here: the providers that let the caller choose use it). */
const OUTPUT_FORMATS: Record<string, ImageMimeType> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

/** A validated `/images/generations` body. */
export interface ImageGenerationRequest {
  model: string;
  prompt: string;
  n: number;
  /** `<width>x<height>`; undefined for the model's default. */
  size: string | undefined;
  outputMimeType: ImageMimeType | undefined;
}

/** A validated `/images/edits` body. */
export interface ImageEditRequest extends ImageGenerationRequest {
  image: DecodedImage;
}

type Json = Record<string, unknown>;

/** Problems of the fields both endpoints share, each named. */
function commonProblems(body: Json): string[] {
  const problems: string[] = [];
  if (typeof body.model !== 'string' || body.model === '') problems.push('model is required (a model id from GET /models)');
  if (typeof body.prompt !== 'string' || body.prompt.trim() === '') problems.push('prompt is required (a non-empty string)');
  else if (!withinCharacters(body.prompt, MAX_PROMPT_CHARS)) problems.push(`prompt must be at most ${MAX_PROMPT_CHARS} characters`);
  if (body.n !== undefined && body.n !== null && !(Number.isInteger(body.n) && (body.n as number) >= 1 && (body.n as number) <= MAX_IMAGES)) {
    problems.push(`n must be an integer from 1 to ${MAX_IMAGES}`);
  }
  if (body.size !== undefined && body.size !== null && !(typeof body.size === 'string' && SIZE.test(body.size))) {
    problems.push('size must have the form <width>x<height>, e.g. 1024x1024');
  }
  if (body.output_format !== undefined && body.output_format !== null && !(typeof body.output_format === 'string' && body.output_format in OUTPUT_FORMATS)) {
    problems.push('output_format must be png, jpeg or webp');
  }
  if (body.response_format !== undefined && body.response_format !== null && body.response_format !== 'b64_json') {
    problems.push('response_format can only be b64_json: images are always returned as base64');
  }
  return problems;
}

function objectBody(body: unknown): Json {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  return body as Json;
}

function fail(problems: string[]): never {
  throw new GatewayError('invalid_request', `Invalid request: ${problems.join('; ')}.`);
}

function generationOf(body: Json): ImageGenerationRequest {
  return {
    model: body.model as string,
    prompt: body.prompt as string,
    n: typeof body.n === 'number' ? body.n : 1,
    size: typeof body.size === 'string' ? body.size : undefined,
    outputMimeType: typeof body.output_format === 'string' ? OUTPUT_FORMATS[body.output_format] : undefined,
  };
}

/** Step 4 of the order of checks for `/images/generations` (spec 4.7). */
export function parseGenerationBody(raw: unknown): ImageGenerationRequest {
  const body = objectBody(raw);
  const problems = commonProblems(body);
  if (problems.length > 0) fail(problems);
  return generationOf(body);
}

/** Step 4 for `/images/edits` (spec 4.8): the generation fields plus the source `image`. */
export function parseEditBody(raw: unknown): ImageEditRequest {
  const body = objectBody(raw);
  const problems = commonProblems(body);
  if (body.image === undefined || body.image === null) problems.push('image is required (b64_json with mime_type, or data_url)');
  if (problems.length > 0) fail(problems);
  return { ...generationOf(body), image: decodeImageInput(body.image, 'image') };
}

/** A size the model does not declare (when it declares any) is the request's fault. */
export function assertSizeFits(size: string | undefined, model: ResolvedModel): void {
  const sizes = model.limits.imageSizes;
  if (size === undefined || sizes.length === 0 || sizes.includes(size)) return;
  throw new GatewayError('invalid_request', `Invalid request: size ${size} is not offered by ${model.id}; use one of ${sizes.join(', ')}.`);
}
