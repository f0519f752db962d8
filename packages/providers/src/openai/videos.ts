import { FormData } from 'undici';
import { malformed, sanitize } from '../errors.ts';
import { blobOf, fileNameFor } from '../image-formats.ts';
import { isRecord, recordField, stringField } from '../json.ts';
import { deadline, unsupported } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions, VideoDownload, VideoRequest, VideoStatus } from '../types.ts';
import { NOT_FOUND_STATUS, SAFETY_CODES, downloadVideoFile, getVideoStatus, isSafeJobId, orWhenNotFound, videoNotFound } from '../video-common.ts';
import { OPENAI_PATHS } from './api.ts';

/** Sora takes a pixel size; these are its landscape and portrait 720p sizes. */
const SIZE_BY_ASPECT: Record<VideoRequest['aspectRatio'], string> = { '16:9': '1280x720', '9:16': '720x1280' };

const STATE_BY_STATUS: Record<string, VideoStatus['state']> = {
  queued: 'queued',
  in_progress: 'running',
  completed: 'completed',
  failed: 'failed',
};

/**
 * `POST {base}/videos`. JSON without a first frame; multipart with the frame as `input_reference`
 * (as the official SDK does). Sora has no last-frame input.
 */
export async function createVideo(
  ctx: ProviderContext,
  req: VideoRequest,
  opts?: CallOptions,
): Promise<{ providerJobId: string }> {
  if (req.lastFrame !== undefined) throw unsupported(ctx, 'a last frame for videos');
  const fields = {
    model: req.model,
    prompt: req.prompt,
    seconds: String(req.durationSeconds),
    size: SIZE_BY_ASPECT[req.aspectRatio],
  };
  let body: { json: unknown } | { form: FormData } = { json: fields };
  if (req.image !== undefined) {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('input_reference', blobOf(req.image.bytes, req.image.mimeType), fileNameFor('first-frame', req.image.mimeType));
    body = { form };
  }
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(OPENAI_PATHS.videos),
    ...body,
    timeoutMs: deadline(ctx, 'videoMs', opts),
    options: opts,
  });
  const id = isRecord(answer) ? stringField(answer, 'id') : undefined;
  if (id === undefined || !isSafeJobId(id)) throw malformed(ctx.name, 'the video job has no usable id');
  return { providerJobId: id };
}

function failureOf(ctx: ProviderContext, video: Record<string, unknown>): VideoStatus['failure'] {
  const error = recordField(video, 'error') ?? {};
  const code = stringField(error, 'code') ?? '';
  const message = stringField(error, 'message') ?? 'The provider failed to generate the video';
  return {
    reason: SAFETY_CODES.test(code) ? 'safety' : 'provider_failed',
    message: sanitize(message, ctx.secrets),
  };
}

/** `GET {base}/videos/{id}`; a 404 is the answer `failed/not_found`. */
export async function getVideo(ctx: ProviderContext, id: string, opts?: CallOptions): Promise<VideoStatus> {
  if (!isSafeJobId(id)) return NOT_FOUND_STATUS;
  return getVideoStatus(ctx, OPENAI_PATHS.video(id), opts, (answer) => {
    const state = isRecord(answer) ? STATE_BY_STATUS[stringField(answer, 'status') ?? ''] : undefined;
    if (!isRecord(answer) || state === undefined) throw malformed(ctx.name, 'the video job has no known status');
    if (state === 'failed') return { state, failure: failureOf(ctx, answer) };
    if (state !== 'completed') return { state };
    const seconds = Number(answer['seconds']);
    return Number.isFinite(seconds) && seconds > 0 ? { state, actualDurationSeconds: seconds } : { state };
  });
}

/** `GET {base}/videos/{id}/content`, `Range` passed through. */
export async function downloadVideo(
  ctx: ProviderContext,
  id: string,
  range: string | undefined,
  opts?: CallOptions,
): Promise<VideoDownload> {
  if (!isSafeJobId(id)) throw videoNotFound(ctx);
  return downloadVideoFile(ctx, ctx.url(OPENAI_PATHS.videoContent(id)), range, opts);
}

/** `DELETE {base}/videos/{id}`: stops and removes the job; an unknown job is already gone. */
export async function cancelVideo(ctx: ProviderContext, id: string, opts?: CallOptions): Promise<void> {
  if (!isSafeJobId(id)) throw videoNotFound(ctx);
  const call = ctx.http.json({ method: 'DELETE', url: ctx.url(OPENAI_PATHS.video(id)), timeoutMs: deadline(ctx, 'videoMs', opts), options: opts });
  await orWhenNotFound(call, () => undefined);
}
