import type { MessageInitShape } from '@bufbuild/protobuf';
import type { videoV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { isProviderError, type ProviderAdapter } from '@gw/providers';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../clock.ts';
import { VideoJob } from '../db/video-job.entity.ts';
import type { ProviderLookup } from './job-driver.ts';
import { JOB_ID } from './job-ids.ts';

type DownloadItem = MessageInitShape<typeof videoV1.DownloadContentResponseSchema>;

export interface DownloadDeps {
  orm: MikroORM;
  providers: ProviderLookup;
  clock: Clock;
  /** Deadline for the provider's answer headers; the body then streams as long as it flows. */
  providerTimeoutMs: number;
}

/**
 * The one answer for every job a caller may not download: unknown, another account's, not
 * completed, or past `expires_at`. Identical in every case, so it reveals nothing.
 */
export function jobNotFound(): GatewayError {
  return new GatewayError('not_found', 'The video job does not exist.');
}

/** A syntactically plausible single or multi byte range; anything else is ignored, as HTTP allows. */
const RANGE = /^bytes=\s*(\d*-\d*)(\s*,\s*\d*-\d*)*\s*$/;
/** gRPC messages stay far below the default 4 MB receive limit. */
const MAX_CHUNK = 1024 * 1024;
const PASSED_HEADERS = ['content-length', 'content-range', 'accept-ranges', 'etag', 'last-modified'];

/** The job as its owner may download it now, or `not_found`. */
export async function downloadableJob(deps: Pick<DownloadDeps, 'orm' | 'clock'>, jobId: string, accountId: string): Promise<VideoJob> {
  if (!JOB_ID.test(jobId) || accountId === '') throw jobNotFound();
  const job = await deps.orm.em.fork().findOne(VideoJob, { id: jobId, accountId });
  const expiresAt = job?.expiresAt ? new Date(job.expiresAt).getTime() : 0;
  if (!job || job.status !== 'completed' || !job.providerJobId || !job.provider || deps.clock().getTime() > expiresAt) throw jobNotFound();
  return job;
}

/**
 * Streams a completed job's MP4 from its provider: a `head` (status and headers), then the body in
 * chunks. Nothing is stored; a `Range` is passed through (206), an unsatisfiable one answers 416
 * with the file's length. The caller's abort (client gone) aborts the provider download, and the
 * gRPC adapter writes each chunk only once the previous one drained.
 */
export async function* downloadContent(deps: DownloadDeps, req: videoV1.DownloadContentRequest, signal: AbortSignal): AsyncGenerator<DownloadItem> {
  const job = await downloadableJob(deps, req.jobId, req.accountId);
  const adapter = deps.providers.get(job.provider!);
  if (!adapter?.downloadVideo) throw new GatewayError('upstream_error', 'The video provider is not available.');
  const range = RANGE.test(req.range) && req.range.length <= 200 ? req.range : undefined;
  const contentRef = job.contentRef ?? undefined;
  const opts = { signal, timeoutMs: deps.providerTimeoutMs, requestId: job.id };

  let download: Awaited<ReturnType<NonNullable<ProviderAdapter['downloadVideo']>>>;
  try {
    download = await adapter.downloadVideo(job.providerJobId!, contentRef, range, opts);
  } catch (err) {
    if (isProviderError(err) && err.upstreamStatus === 416) {
      yield { item: { case: 'head', value: { status: 416, headers: await unsatisfiableHeaders(adapter, job, contentRef, opts) } } };
      return;
    }
    // The provider no longer has the file: for the client, as if expired.
    if (isProviderError(err) && err.code === 'not_found') throw jobNotFound();
    throw err;
  }
  const headers: Record<string, string> = { 'content-type': 'video/mp4', 'accept-ranges': 'bytes' };
  for (const name of PASSED_HEADERS) {
    const value = download.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  yield { item: { case: 'head', value: { status: download.status === 206 ? 206 : 200, headers } } };
  for await (const chunk of download.body) {
    for (let at = 0; at < chunk.length; at += MAX_CHUNK) {
      yield { item: { case: 'chunk', value: chunk.subarray(at, at + MAX_CHUNK) } };
    }
  }
}

/**
 * Headers of a 416: `Content-Range: bytes *\/<length>` tells the client the size to ask within. The
 * provider's 416 body is not passed on, so the length is read from a fresh request's headers,
 * whose body is abandoned at once.
 */
async function unsatisfiableHeaders(
  adapter: ProviderAdapter,
  job: VideoJob,
  contentRef: string | undefined,
  opts: { signal: AbortSignal; timeoutMs: number; requestId: string },
): Promise<Record<string, string>> {
  const probe = new AbortController();
  const signal = AbortSignal.any([opts.signal, probe.signal]);
  try {
    const whole = await adapter.downloadVideo!(job.providerJobId!, contentRef, undefined, { ...opts, signal });
    const length = whole.headers['content-length'];
    return length === undefined ? {} : { 'content-range': `bytes */${length}` };
  } catch {
    return {};
  } finally {
    probe.abort();
  }
}
