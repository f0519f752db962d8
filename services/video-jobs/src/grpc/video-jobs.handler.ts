import type { MethodsOf, ServiceImpl, videoV1 } from '@gw/contracts';
import type { MikroORM } from '@mikro-orm/postgresql';
import { VideoJob } from '../db/video-job.entity.ts';
import { downloadContent, jobNotFound, type DownloadDeps } from '../domain/content-download.ts';
import type { JobCreator } from '../domain/create-job.ts';
import { JOB_ID } from '../domain/job-ids.ts';
import { isPublic, jobView } from '../domain/job-view.ts';

export interface HandlerDeps {
  orm: MikroORM;
  creator: JobCreator;
  download: DownloadDeps;
}

/**
 * The VideoJobsService rpcs. Reading a job never calls the provider: the worker keeps the record
 * current, so polling costs nothing upstream (and nothing in credits).
 */
export function videoJobsHandler(deps: HandlerDeps): ServiceImpl<MethodsOf<typeof videoV1.VideoJobsService>> {
  return {
    createJob: async (req) => ({ job: await deps.creator.create(req) }),
    getJob: async (req) => {
      if (!JOB_ID.test(req.jobId) || req.accountId === '') throw jobNotFound();
      const job = await deps.orm.em.fork().findOne(VideoJob, { id: req.jobId, accountId: req.accountId });
      // `pending` and `abandoned` jobs do not exist for the client (not, or not yet, charged).
      if (!job || !isPublic(job.status)) throw jobNotFound();
      return { job: jobView(job, job.status) };
    },
    downloadContent: (req, ctx) => downloadContent(deps.download, req, ctx.signal),
  };
}
