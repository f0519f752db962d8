import { GatewayError } from '@gw/errors';
import { MAX_PROMPT_CHARS, type AspectRatio, type VideoBody } from '../schemas/media.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { decodeImageInput, MAX_IMAGE_INPUT_JSON_BYTES, type DecodedImage } from './image-input.ts';

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

/** Step 4 for spec 4.9, after its schema: the default ratio filled in, the frames decoded (spec 2.4). */
export function videoRequestOf(body: VideoBody): VideoRequest {
  return {
    model: body.model,
    prompt: body.prompt,
    durationSeconds: body.duration_seconds,
    aspectRatio: body.aspect_ratio ?? '16:9',
    image: body.image ? decodeImageInput(body.image, 'image') : undefined,
    lastFrame: body.last_frame ? decodeImageInput(body.last_frame, 'last_frame') : undefined,
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
