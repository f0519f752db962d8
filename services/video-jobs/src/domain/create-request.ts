import { withinCharacters, type videoV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';

/** Spec 8: the limits of a video request. The gateway checks them first, with the client's wording. */
export const VIDEO_DURATIONS: readonly number[] = [4, 6, 8];
export const ASPECT_RATIOS: readonly string[] = ['16:9', '9:16'];
export const MAX_PROMPT_CHARS = 4000;
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;
export const FRAME_MIME_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp'];
const MAX_IDEMPOTENCY_KEY = 255;

function frameProblem(name: string, frame: videoV1.FrameImage | undefined): string | null {
  if (frame === undefined) return null;
  if (!FRAME_MIME_TYPES.includes(frame.mimeType)) return `${name} must be PNG, JPEG or WEBP`;
  if (frame.data.length === 0 || frame.data.length > MAX_FRAME_BYTES) return `${name} must be 1 byte to 8 MB`;
  return null;
}

/**
 * The service's own check of a creation request. The gateway already validated the public body;
 * this guards the contract of the rpc itself, so no caller can store a job the worker cannot run.
 */
export function checkCreateRequest(req: videoV1.CreateJobRequest): void {
  const problems = [
    req.accountId === '' ? 'account_id is required' : null,
    req.publicModel === '' ? 'public_model is required' : null,
    req.prompt.trim() === '' || !withinCharacters(req.prompt, MAX_PROMPT_CHARS) ? 'prompt must be 1 to 4000 characters' : null,
    req.prompt.includes('\u0000') ? 'prompt must not contain the NUL character (U+0000)' : null,
    VIDEO_DURATIONS.includes(req.durationSeconds) ? null : 'duration_seconds must be 4, 6 or 8',
    ASPECT_RATIOS.includes(req.aspectRatio) ? null : 'aspect_ratio must be 16:9 or 9:16',
    req.pricePerSecond < 0n ? 'price_per_second must not be negative' : null,
    frameProblem('image', req.image),
    frameProblem('last_frame', req.lastFrame),
    req.lastFrame !== undefined && req.image === undefined ? 'last_frame requires image' : null,
    req.idempotencyKey.length > MAX_IDEMPOTENCY_KEY ? 'idempotency_key is too long' : null,
    req.idempotencyKey !== '' && req.bodyHash.length !== 32 ? 'body_hash must be a SHA-256 digest' : null,
  ].filter((p): p is string => p !== null);
  if (problems.length > 0) throw new GatewayError('invalid_request', `Invalid request: ${problems.join('; ')}.`);
  if (req.routes.length === 0) {
    throw new GatewayError('model_temporarily_unavailable', `The model ${req.publicModel} is temporarily unavailable. Nothing was charged.`);
  }
}
