import { malformed, sanitize } from '../errors.ts';
import { isRecord, numberField, recordField, recordsField, stringField } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions, ImageBytes, VideoDownload, VideoRequest, VideoStatus } from '../types.ts';
import { NOT_FOUND_STATUS, SAFETY_CODES, downloadVideoFile, getVideoStatus, orWhenNotFound, videoNotFound } from '../video-common.ts';
import { GOOGLE_PATHS, isSafeOperationName } from './api.ts';

function imageInput(image: ImageBytes): JsonRecord {
  return { bytesBase64Encoded: Buffer.from(image.bytes).toString('base64'), mimeType: image.mimeType };
}

/** `POST {base}/models/{model}:predictLongRunning` → the operation name, our job id. */
export async function createVideo(
  ctx: ProviderContext,
  req: VideoRequest,
  opts?: CallOptions,
): Promise<{ providerJobId: string }> {
  const instance: JsonRecord = { prompt: req.prompt };
  if (req.image !== undefined) instance['image'] = imageInput(req.image);
  if (req.lastFrame !== undefined) instance['lastFrame'] = imageInput(req.lastFrame);
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(GOOGLE_PATHS.predictLongRunning(req.model)),
    json: {
      instances: [instance],
      parameters: { aspectRatio: req.aspectRatio, durationSeconds: req.durationSeconds },
    },
    timeoutMs: deadline(ctx, 'videoMs', opts),
    options: opts,
  });
  const name = isRecord(answer) ? stringField(answer, 'name') : undefined;
  if (name === undefined || !isSafeOperationName(name)) throw malformed(ctx.name, 'the operation has no usable name');
  return { providerJobId: name };
}

/** A finished operation: its error, its safety filtering, or its first video's URI. */
function finishedStatus(ctx: ProviderContext, operation: JsonRecord): VideoStatus {
  const error = recordField(operation, 'error');
  if (error !== undefined) {
    const message = stringField(error, 'message') ?? 'The provider failed to generate the video';
    const kind = `${stringField(error, 'status') ?? ''} ${message}`;
    return {
      state: 'failed',
      failure: { reason: SAFETY_CODES.test(kind) ? 'safety' : 'provider_failed', message: sanitize(message, ctx.secrets) },
    };
  }
  const result = recordField(recordField(operation, 'response') ?? {}, 'generateVideoResponse') ?? {};
  const uri = stringField(recordField((recordsField(result, 'generatedSamples') ?? [])[0] ?? {}, 'video') ?? {}, 'uri');
  if (uri !== undefined) return { state: 'completed', contentRef: uri };
  const filtered = numberField(result, 'raiMediaFilteredCount') ?? 0;
  const reasons = (Array.isArray(result['raiMediaFilteredReasons']) ? result['raiMediaFilteredReasons'] : []).filter(
    (reason): reason is string => typeof reason === 'string',
  );
  if (filtered > 0 || reasons.length > 0) {
    const why = reasons.length > 0 ? sanitize(reasons.join('; '), ctx.secrets) : 'The video was blocked by safety filters';
    return { state: 'failed', failure: { reason: 'safety', message: why } };
  }
  return { state: 'failed', failure: { reason: 'provider_failed', message: 'The provider finished without a video' } };
}

/** `GET {base}/{operationName}`; not done yet is `running` (Veo has no separate queue state). */
export async function getVideo(ctx: ProviderContext, name: string, opts?: CallOptions): Promise<VideoStatus> {
  if (!isSafeOperationName(name)) return NOT_FOUND_STATUS;
  return getVideoStatus(ctx, GOOGLE_PATHS.operation(name), opts, (answer) => {
    if (!isRecord(answer)) throw malformed(ctx.name, 'the operation is not an object');
    return answer['done'] === true ? finishedStatus(ctx, answer) : { state: 'running' };
  });
}

/** `POST {base}/{operation}:cancel`: stops a long-running generation; an unknown one is already stopped. */
export async function cancelVideo(ctx: ProviderContext, name: string, opts?: CallOptions): Promise<void> {
  if (!isSafeOperationName(name)) return;
  const call = ctx.http.json({
    method: 'POST',
    url: ctx.url(`${GOOGLE_PATHS.operation(name)}:cancel`),
    json: {},
    timeoutMs: deadline(ctx, 'videoMs', opts),
    options: opts,
  });
  await orWhenNotFound(call, () => undefined);
}

/**
 * Streams the file behind the video URI (found again by polling when no `contentRef` is given). The
 * URI must be on the provider's own origin: the key goes with it, and nothing else may be fetched.
 */
export async function downloadVideo(
  ctx: ProviderContext,
  name: string,
  contentRef: string | undefined,
  range: string | undefined,
  opts?: CallOptions,
): Promise<VideoDownload> {
  const uri = contentRef ?? (await getVideo(ctx, name, opts)).contentRef;
  if (uri === undefined) throw videoNotFound(ctx);
  let target: URL;
  try {
    target = new URL(uri);
  } catch {
    throw malformed(ctx.name, 'the video URI is not a URL');
  }
  if (target.origin !== new URL(ctx.url('/')).origin) throw malformed(ctx.name, 'the video URI is not on the provider host');
  return downloadVideoFile(ctx, target.toString(), range, opts);
}
