import { withinCharacters } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { decodeImageInput, MAX_IMAGE_INPUT_JSON_BYTES, type DecodedImage } from './image-input.ts';

/** Spec 4.9 and 8. */
export const VIDEO_DURATIONS: readonly number[] = [4, 6, 8];
export const ASPECT_RATIOS = ['16:9', '9:16'] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];
export const MAX_PROMPT_CHARS = 4000;

/** The JSON text of the longest valid prompt: every character an escaped surrogate pair (`\ud83d\ude00`). */
const MAX_PROMPT_JSON_BYTES = MAX_PROMPT_CHARS * 12;
/** Base64 written with escaped slashes (`\/`, as some JSON encoders do) grows by about 1/64. */
const MAX_FRAME_JSON_BYTES = MAX_IMAGE_INPUT_JSON_BYTES + Math.ceil(MAX_IMAGE_INPUT_JSON_BYTES / 64);
/** Room for the small fields and any whitespace around them. */
const FIELDS_JSON_BYTES = 64 * 1024;

/**
 * The largest valid request: two 8 MB frames in base64 and the longest prompt. A larger body is
 * refused from its Content-Length (or once a chunked body passes it), never buffered whole.
 */
export const VIDEO_BODY_LIMIT = 2 * MAX_FRAME_JSON_BYTES + MAX_PROMPT_JSON_BYTES + FIELDS_JSON_BYTES;
/** What a body too large is told on `/videos/generations`: the rule of its frames. */
export const VIDEO_BODY_HELP = {
  tooLarge:
    'The request body is larger than any valid video request: each frame (image, last_frame) may be at most 8 MB (8388608 bytes) decoded (spec 8). Send smaller frames.',
};

/** A validated `POST /videos/generations` body. */
export interface VideoRequest {
  model: string;
  prompt: string;
  durationSeconds: number;
  aspectRatio: AspectRatio;
  /** First frame (image-to-video). */
  image: DecodedImage | undefined;
  /** Last frame; only together with `image`. */
  lastFrame: DecodedImage | undefined;
}

type Json = Record<string, unknown>;

const absent = (value: unknown) => value === undefined || value === null;

/**
 * Step 4 of the order of checks for spec 4.9: every field problem named at once; then the frames
 * are decoded (spec 2.4: PNG, JPEG or WEBP, at most 8 MB, bytes matching the declared type).
 */
export function parseVideoBody(raw: unknown): VideoRequest {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  const body = raw as Json;
  const problems: string[] = [];
  if (typeof body.model !== 'string' || body.model === '') problems.push('model is required (a VIDEO model id from GET /models)');
  if (typeof body.prompt !== 'string' || body.prompt.trim() === '') problems.push('prompt is required (a non-empty string)');
  else if (!withinCharacters(body.prompt, MAX_PROMPT_CHARS)) problems.push(`prompt must be at most ${MAX_PROMPT_CHARS} characters`);
  // Stored until the job is submitted, and Postgres text cannot hold a NUL.
  else if (body.prompt.includes('\u0000')) problems.push('prompt must not contain the NUL character (U+0000)');
  if (!(typeof body.duration_seconds === 'number' && VIDEO_DURATIONS.includes(body.duration_seconds))) {
    problems.push('duration_seconds is required and must be 4, 6 or 8');
  }
  if (!absent(body.aspect_ratio) && !ASPECT_RATIOS.includes(body.aspect_ratio as AspectRatio)) problems.push('aspect_ratio must be "16:9" or "9:16"');
  if (!absent(body.last_frame) && absent(body.image)) problems.push('last_frame must be sent together with image (the first frame)');
  if (problems.length > 0) throw new GatewayError('invalid_request', `Invalid request: ${problems.join('; ')}.`);
  return {
    model: body.model as string,
    prompt: body.prompt as string,
    durationSeconds: body.duration_seconds as number,
    aspectRatio: absent(body.aspect_ratio) ? '16:9' : (body.aspect_ratio as AspectRatio),
    image: absent(body.image) ? undefined : decodeImageInput(body.image, 'image'),
    lastFrame: absent(body.last_frame) ? undefined : decodeImageInput(body.last_frame, 'last_frame'),
  };
}

/** Frames only where the model takes them (its catalog `limits`): checked before any charge. */
export function assertFramesFit(req: VideoRequest, model: ResolvedModel): void {
  if (req.image && !model.limits.videoFirstFrame) {
    throw new GatewayError('invalid_request', `Invalid request: ${model.id} does not accept a first frame (image).`);
  }
  if (req.lastFrame && !model.limits.videoLastFrame) {
    throw new GatewayError('invalid_request', `Invalid request: ${model.id} does not accept a last frame (last_frame).`);
  }
}
