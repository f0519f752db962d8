import { videoV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';

/** The public form of a job id; anything else is answered `not_found` without asking video-jobs. */
export const VIDEO_JOB_ID = /^vidjob_[0-9a-f]{32}$/;

/**
 * The one 404 for a job the caller may not see or download: unknown, another account's, not
 * completed, expired. Its text is video-jobs' own, so every case reads the same.
 */
export function videoJobNotFound(): GatewayError {
  return new GatewayError('not_found', 'The video job does not exist.');
}

const STATUS: Record<number, string> = {
  [videoV1.VideoJobStatus.QUEUED]: 'queued',
  [videoV1.VideoJobStatus.RUNNING]: 'running',
  [videoV1.VideoJobStatus.COMPLETED]: 'completed',
  [videoV1.VideoJobStatus.FAILED]: 'failed',
};

const seconds = (unixMs: bigint) => Math.floor(Number(unixMs) / 1000);

function common(job: videoV1.VideoJob) {
  return {
    id: job.jobId,
    status: STATUS[job.status] ?? 'queued',
    model: job.model,
    created_at: seconds(job.createdAtUnixMs),
    requested_duration_seconds: job.requestedDurationSeconds,
  };
}

/** Spec 4.9's creation response: the job and what it was charged. */
export function createdJobBody(job: videoV1.VideoJob) {
  return {
    ...common(job),
    service: { credit_charged: Number(job.creditCharged), balance_after: Number(job.balanceAfter) },
  };
}

/**
 * Spec 4.10's status response (fields of 2.2). `content_url` is an absolute path that includes the
 * deployment's public base path (DECISIONS.md), so a client behind an ingress uses it as is.
 */
export function jobStatusBody(job: videoV1.VideoJob, basePath: string) {
  const completed = job.status === videoV1.VideoJobStatus.COMPLETED;
  return {
    ...common(job),
    ...(completed
      ? {
          content_url: `${basePath}/videos/generations/${job.jobId}/content`,
          completed_at: seconds(job.completedAtUnixMs),
          expires_at: seconds(job.expiresAtUnixMs),
        }
      : {}),
    ...(job.actualDurationSeconds === undefined ? {} : { actual_duration_seconds: job.actualDurationSeconds }),
    service: { credit_charged: Number(job.creditCharged), credit_refunded: Number(job.creditRefunded) },
  };
}
