import { defineEntity, p } from '@mikro-orm/postgresql';

/**
 * Internal job states. `pending`: the creation saga has not finished (not yet charged for sure);
 * `abandoned`: the saga was cancelled without a charge. Neither is ever shown to a client: such a
 * job does not exist for them. The other four are the public statuses.
 */
export type JobStatus = 'pending' | 'queued' | 'running' | 'completed' | 'failed' | 'abandoned';
export type PublicStatus = Exclude<JobStatus, 'pending' | 'abandoned'>;

/** Why a job failed: what the provider said, or that we gave up on it. */
export type FailureReason = 'provider_failed' | 'safety' | 'not_found' | 'timed_out';

/** One upstream route the job may be submitted to, as the catalog listed it at creation. */
export interface RouteRecord {
  provider: string;
  upstreamModel: string;
  priority: number;
  weight: number;
}

/** A video job: its charge, its provider job, and the worker's bookkeeping. */
const VideoJobSchema = defineEntity({
  name: 'VideoJob',
  tableName: 'video_job',
  properties: {
    /** `vidjob_<32 hex>`; also the id of its charge in billing. */
    id: p.text().primary(),
    accountId: p.text(),
    keyId: p.text(),
    /** Public model id. */
    model: p.text(),
    status: p.text().$type<JobStatus>(),
    durationSeconds: p.integer(),
    aspectRatio: p.text().$type<'16:9' | '9:16'>(),
    pricePerSecond: p.bigint(),
    /** Credits charged at creation (duration x price once the charge is settled). */
    creditCharged: p.bigint(),
    /** Credits refunded, recorded from billing's `billing.refund.completed`. */
    creditRefunded: p.bigint(),
    routes: p.json<RouteRecord[]>(),
    /** The route the job was submitted to (set with `providerJobId`). */
    provider: p.text().nullable(),
    upstreamModel: p.text().nullable(),
    providerJobId: p.text().nullable(),
    /** Provider handle of the finished file, when the provider has one (Veo: the file URI). */
    contentRef: p.text().nullable(),
    actualDurationSeconds: p.integer().nullable(),
    failureReason: p.text().$type<FailureReason>().nullable(),
    /** Submits and polls so far; drives the backoff. */
    attempts: p.integer(),
    /** When the worker may next look at the job; while leased, the lease's end. */
    nextAttemptAt: p.datetime(),
    /** The current lease's token; a worker writes its result only while its token is current. */
    leaseToken: p.uuid().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    submittedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
  },
});
export class VideoJob extends VideoJobSchema.class {}
VideoJobSchema.setClass(VideoJob);
