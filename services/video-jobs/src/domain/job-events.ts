import { create, toBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FailureReason, PublicStatus } from '../db/video-job.entity.ts';

export const STATUS_CHANGED_SUBJECT = 'video.job.status_changed';
export const JOB_FAILED_SUBJECT = 'video.job.failed';

/** What an event needs to know about the job; a plain record so callers need not load the entity. */
export interface JobFacts {
  id: string;
  accountId: string;
  model: string;
  durationSeconds: number;
  creditCharged: bigint;
}

/**
 * Queues the announcements of a status change in the caller's transaction: always
 * `video.job.status_changed`, and for a failure also `video.job.failed` (billing refunds on it).
 * Event ids are `<job id>:status:<status>` and `<job id>:failed`: a job reaches each status once, so
 * a repeat (a crash between publish and mark) carries the same id and is dropped by JetStream within
 * its window, or by a consumer's de-duplication after it. The ids double as JetStream msgIDs, so
 * the two events of one failure must (and do) differ.
 */
export function announceStatus(
  tx: EntityManager,
  job: JobFacts,
  change: { status: PublicStatus; previous: PublicStatus | ''; at: Date; failureReason?: FailureReason },
): void {
  const statusChanged = create(eventsV1.VideoJobStatusChangedSchema, {
    eventId: `${job.id}:status:${change.status}`,
    jobId: job.id,
    accountId: job.accountId,
    status: change.status,
    previousStatus: change.previous,
    occurredAtUnixMs: BigInt(change.at.getTime()),
    requestedDurationSeconds: job.durationSeconds,
    creditCharged: job.creditCharged,
    failureReason: change.failureReason ?? '',
    model: job.model,
  });
  enqueueEvent(tx, {
    subject: STATUS_CHANGED_SUBJECT,
    payload: toBinary(eventsV1.VideoJobStatusChangedSchema, statusChanged),
    msgId: statusChanged.eventId,
  });
  if (change.status !== 'failed') return;
  const failed = create(eventsV1.VideoJobFailedSchema, {
    eventId: `${job.id}:failed`,
    jobId: job.id,
    accountId: job.accountId,
    failureReason: change.failureReason ?? 'provider_failed',
  });
  enqueueEvent(tx, { subject: JOB_FAILED_SUBJECT, payload: toBinary(eventsV1.VideoJobFailedSchema, failed), msgId: failed.eventId });
}
