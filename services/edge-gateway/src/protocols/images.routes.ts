import { GatewayError } from '@gw/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from '../deps.ts';
import { ROUTE_DOCS } from '../openapi/schemas.ts';
import { bodyHash, idempotencyKeyOf } from '../generation/idempotency.ts';
import { imagesBody, runImageJob, type ImageJobCall } from '../generation/image-job.ts';
import { assertSizeFits, EDIT_BODY_HELP, EDIT_BODY_LIMIT, editRequestOf, GENERATION_BODY_LIMIT, generationRequestOf } from '../generation/image-request.ts';
import { resolveModel } from '../generation/resolve-model.ts';

const JOB_ID = /^imgjob_[0-9a-f]{32}$/;

/**
 * Steps 4 and 5 of the order of checks, shared by both endpoints (1 to 3 are the route checks, the
 * body's shape its schema); the rest is `runImageJob`.
 */
function prepare(deps: GatewayDeps, request: FastifyRequest, endpoint: ImageJobCall['endpoint'], body: ImageJobCall['request']): ImageJobCall {
  const key = idempotencyKeyOf(request.headers);
  const model = resolveModel(deps, request, body.model, endpoint);
  assertSizeFits(body.size, model);
  return { endpoint, request: body, model, idempotency: key === undefined ? undefined : { key, bodyHash: bodyHash(request.body) } };
}

/**
 * Images (spec 4.7, 4.8) through `media`, plus the extension `GET /images/jobs/{job_id}` that
 * serves a finished result again for 24 hours (the `job_id` of a `duplicate_request`).
 */
export async function imagesRoutes(untyped: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const app = untyped.withTypeProvider<ZodTypeProvider>();
  app.post('/images/generations', { config: { generation: true }, bodyLimit: GENERATION_BODY_LIMIT, schema: ROUTE_DOCS['images/generations'] }, async (request, reply) =>
    runImageJob(deps, request, reply, prepare(deps, request, 'images/generations', generationRequestOf(request.body))),
  );

  app.post('/images/edits', { config: { generation: true, bodyHelp: EDIT_BODY_HELP }, bodyLimit: EDIT_BODY_LIMIT, schema: ROUTE_DOCS['images/edits'] }, async (request, reply) =>
    runImageJob(deps, request, reply, prepare(deps, request, 'images/edits', editRequestOf(request.body))),
  );

  // Not a generation request: operator switches do not block reading a result already paid for.
  app.get<{ Params: { jobId: string } }>('/images/jobs/:jobId', { schema: ROUTE_DOCS['images/jobs/:jobId'] }, async (request) => {
    const { jobId } = request.params;
    if (!JOB_ID.test(jobId)) throw new GatewayError('not_found', 'No image job with this id.');
    const job = await deps.media.getImageJob({ jobId, accountId: request.apiKey.accountId });
    // The original response again: `created` is when the job finished, `service` what it was charged.
    return imagesBody(job.images, { creditCharged: job.creditCharged, balanceAfter: job.balanceAfter }, Number(job.completedAtUnixMs));
  });
}
