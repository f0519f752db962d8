import { IdempotencyClaim } from './idempotency-claim.entity.ts';
import { VideoJobInput } from './video-job-input.entity.ts';
import { VideoJob } from './video-job.entity.ts';

/** Video-jobs' tables, all in its own `video_jobs` schema. */
export const videoJobsEntities = [VideoJob, VideoJobInput, IdempotencyClaim];
