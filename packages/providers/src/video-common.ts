import { ProviderError } from './errors.ts';
import type { ProviderContext } from './provider-context.ts';
import type { VideoStatus } from './types.ts';

/** True for a provider 404: the job (or its file) is gone, which is an answer, not a fault. */
export function isUpstreamNotFound(err: unknown): boolean {
  return err instanceof ProviderError && err.upstreamStatus === 404;
}

export const NOT_FOUND_STATUS: VideoStatus = {
  state: 'failed',
  failure: { reason: 'not_found', message: 'The provider no longer knows this video job' },
};

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
