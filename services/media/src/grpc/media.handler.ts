import type { mediaV1, MethodsOf, ServiceImpl } from '@gw/contracts';
import { abandonImageJob, beginImageJob, finishImageJob, getImageJob, type JobPolicy } from '../domain/image-jobs.ts';
import { operationOf, runImageJob, type RunDeps } from '../domain/image-run.ts';

export interface MediaDeps extends RunDeps {
  policy: JobPolicy;
}

/** The MediaService rpcs. Each database step works in its own forked EntityManager. */
export function mediaHandler(deps: MediaDeps): ServiceImpl<MethodsOf<typeof mediaV1.MediaService>> {
  const em = () => deps.orm.em.fork();
  return {
    beginImageJob: async (req) => ({
      jobId: await beginImageJob(
        em(),
        { accountId: req.accountId, idempotencyKey: req.idempotencyKey, bodyHash: req.bodyHash, operation: operationOf(req.operation) },
        deps.policy,
        deps.now(),
      ),
    }),
    runImageJob: async (req, ctx) => {
      const produced = await runImageJob(deps, req, ctx.signal);
      return { images: produced.images, provider: produced.provider };
    },
    finishImageJob: async (req) => {
      await finishImageJob(em(), req, deps.policy, deps.now());
      return {};
    },
    abandonImageJob: async (req) => {
      await abandonImageJob(em(), req, deps.now());
      return {};
    },
    getImageJob: async (req) => {
      const job = await getImageJob(em(), req, deps.now());
      return {
        jobId: job.jobId,
        images: job.images,
        creditCharged: job.creditCharged,
        balanceAfter: job.balanceAfter,
        completedAtUnixMs: BigInt(job.completedAt.getTime()),
      };
    },
  };
}
