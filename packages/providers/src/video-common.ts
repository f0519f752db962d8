import { ProviderError } from './errors.ts';
import { deadline } from './provider-context.ts';
import type { ProviderContext } from './provider-context.ts';
import type { CallOptions, VideoDownload, VideoStatus } from './types.ts';

/**
 * The call's answer, or `onNotFound()`'s when the provider answered 404: a job (or its file) that
 * is gone is an answer, not a fault. The one home of that rule for every provider's video calls.
 */
export async function orWhenNotFound<T, U>(call: Promise<T>, onNotFound: () => U): Promise<T | U> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof ProviderError && err.upstreamStatus === 404) return onNotFound();
    throw err;
  }
}

export const NOT_FOUND_STATUS: VideoStatus = {
  state: 'failed',
  failure: { reason: 'not_found', message: 'The provider no longer knows this video job' },
};

/** `GET {base}{path}`, the job's answer read by `read`; a 404 is the answer `failed/not_found`. */
export function getVideoStatus(
  ctx: ProviderContext,
  path: string,
  opts: CallOptions | undefined,
  read: (answer: unknown) => VideoStatus,
): Promise<VideoStatus> {
  const answer = ctx.http.json({ method: 'GET', url: ctx.url(path), timeoutMs: deadline(ctx, 'videoMs', opts), options: opts });
  return orWhenNotFound(answer.then(read), () => NOT_FOUND_STATUS);
}

/** `GET url` of a video file as MP4, `Range` passed through; a 404 is `not_found` (the file is gone). */
export function downloadVideoFile(ctx: ProviderContext, url: string, range: string | undefined, opts: CallOptions | undefined): Promise<VideoDownload> {
  const download = ctx.http.download({
    method: 'GET',
    url,
    headers: { accept: 'video/mp4', ...(range === undefined ? {} : { range }) },
    timeoutMs: deadline(ctx, 'videoMs', opts),
    idleMs: ctx.timeouts.videoMs,
    options: opts,
  });
  return orWhenNotFound(download, () => {
    throw videoNotFound(ctx);
  });
}

export function videoNotFound(ctx: ProviderContext): ProviderError {
  return new ProviderError('not_found', 'The provider no longer has this video', {
    provider: ctx.name,
    retryable: false,
    upstreamStatus: 404,
  });
}

/** Provider failure codes that mean the content was refused by a safety system. */
export const SAFETY_CODES = /moderation|safety|content_policy|policy_violation|blocked/i;

/** Job ids go into URL paths: they must look like ids, never like paths of their own. */
export function isSafeJobId(id: string): boolean {
  return /^[\w.-]{1,256}$/.test(id) && id !== '.' && id !== '..';
}
