import { create } from '@bufbuild/protobuf';
import { videoV1 } from '@gw/contracts';
import type { PublicStatus, VideoJob } from '../db/video-job.entity.ts';

const PROTO_STATUS: Record<PublicStatus, videoV1.VideoJobStatus> = {
  queued: videoV1.VideoJobStatus.QUEUED,
  running: videoV1.VideoJobStatus.RUNNING,
  completed: videoV1.VideoJobStatus.COMPLETED,
  failed: videoV1.VideoJobStatus.FAILED,
};

export function isPublic(status: VideoJob['status']): status is PublicStatus {
  return status in PROTO_STATUS;
}

const ms = (d: Date | null | undefined): bigint => (d ? BigInt(new Date(d).getTime()) : 0n);

/**
 * Credits refunded, as the client is shown them. A failed job's refund is decided when it fails:
 * the failure and its refund request commit together and billing refunds the charge in full,
 * exactly once. So a failed job shows its charge as refunded from the moment it is failed (spec
 * 2.2: non-zero when the job failed), not 0 while the refund travels to billing, which is ~30 ms
 * normally and as long as billing or NATS is away otherwise; the wallet shows it once applied.
 */
function refundedOf(job: VideoJob, status: PublicStatus): bigint {
  return status === 'failed' && job.creditRefunded === 0n ? job.creditCharged : job.creditRefunded;
}

/** The public view of a job (`status` must be public: callers answer `not_found` otherwise). */
export function jobView(job: VideoJob, status: PublicStatus, balanceAfter = 0n): videoV1.VideoJob {
  return create(videoV1.VideoJobSchema, {
    jobId: job.id,
    status: PROTO_STATUS[status],
    requestedDurationSeconds: job.durationSeconds,
    creditCharged: job.creditCharged,
    creditRefunded: refundedOf(job, status),
    completedAtUnixMs: status === 'completed' ? ms(job.completedAt) : 0n,
    expiresAtUnixMs: status === 'completed' ? ms(job.expiresAt) : 0n,
    ...(job.actualDurationSeconds === null || job.actualDurationSeconds === undefined ? {} : { actualDurationSeconds: job.actualDurationSeconds }),
    balanceAfter,
    model: job.model,
    createdAtUnixMs: ms(job.createdAt),
  });
}
