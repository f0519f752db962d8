import { VideoJobInput } from './video-job-input.entity.ts';
import { VideoJob } from './video-job.entity.ts';

/**
 * Video-jobs' tables, all in its own `video_jobs` schema. Its Idempotency-Key claims
 * (`idempotency_claim`) are read and written by `@gw/service-kit`'s claim functions, not an entity.
 */
export const videoJobsEntities = [VideoJob, VideoJobInput];
