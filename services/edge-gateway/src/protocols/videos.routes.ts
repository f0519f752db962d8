import { Readable } from 'node:stream';
import { create } from '@bufbuild/protobuf';
import { catalogV1, RpcError, type videoV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { status } from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from '../deps.ts';
import { ROUTE_DOCS } from '../openapi/schemas.ts';
import { bodyHash, idempotencyKeyOf } from '../generation/idempotency.ts';
import { createdJobBody, jobStatusBody, VIDEO_JOB_ID, videoJobNotFound } from '../generation/video-job-view.ts';
import { assertFramesFit, VIDEO_BODY_HELP, VIDEO_BODY_LIMIT, videoRequestOf } from '../generation/video-request.ts';
import { resolveModel } from '../generation/resolve-model.ts';

const ENDPOINT = 'videos/generations';
/** Creation is two billing calls and two transactions in video-jobs, each bounded well below this. */
const CREATE_TIMEOUT_MS = 30_000;
/** The whole download stream; a slow client of a large file may need long. */
const DOWNLOAD_TIMEOUT_MS = 30 * 60_000;

type Params = { Params: { jobId: string } };

/**
 * Video jobs (spec 4.9 to 4.11) through `video-jobs`. Creation is a generation request (switches,
 * validation, model resolution, then video-jobs: Idempotency-Key, key limits and the charge).
 * Polling and downloading are not: maintenance does not block them, and they never charge.
 */
export async function videosRoutes(untyped: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const app = untyped.withTypeProvider<ZodTypeProvider>();
  app.post('/videos/generations', { config: { generation: true, bodyHelp: VIDEO_BODY_HELP }, bodyLimit: VIDEO_BODY_LIMIT, schema: ROUTE_DOCS['videos/generations'] }, async (request, reply) => {
    const key = idempotencyKeyOf(request.headers);
    const body = videoRequestOf(request.body);
    const model = resolveModel(deps, request, body.model, ENDPOINT);
    assertFramesFit(body, model);
    const creation = {
      accountId: request.apiKey.accountId,
      keyId: request.apiKey.keyId,
      idempotencyKey: key ?? '',
      bodyHash: key === undefined ? new Uint8Array() : bodyHash(request.body),
      publicModel: model.id,
      routes: model.routes.map((r) => create(catalogV1.RouteSchema, r)),
      pricePerSecond: model.price,
      prompt: body.prompt,
      durationSeconds: body.durationSeconds,
      aspectRatio: body.aspectRatio,
      ...(body.image ? { image: { data: body.image.bytes, mimeType: body.image.mimeType } } : {}),
      ...(body.lastFrame ? { lastFrame: { data: body.lastFrame.bytes, mimeType: body.lastFrame.mimeType } } : {}),
    };
    const { job } = await deps.videoJobs.createJob(creation, { timeoutMs: CREATE_TIMEOUT_MS }).catch((err: unknown) => unconfirmed(err, key !== undefined));
    // The job id is the request's id in billing: the client is shown that id (the log line has both).
    reply.header('x-request-id', job!.jobId);
    request.log.info({ jobId: job!.jobId }, 'video job created');
    return createdJobBody(job!);
  });

  app.get<Params>('/videos/generations/:jobId', { schema: ROUTE_DOCS['videos/generations/:jobId'] }, async (request) => {
    const { jobId } = request.params;
    if (!VIDEO_JOB_ID.test(jobId)) throw videoJobNotFound();
    const { job } = await deps.videoJobs.getJob({ jobId, accountId: request.apiKey.accountId });
    return jobStatusBody(job!, deps.basePath);
  });

  app.get<Params>('/videos/generations/:jobId/content', { schema: ROUTE_DOCS['videos/generations/:jobId/content'] }, async (request, reply) => {
    const { jobId } = request.params;
    if (!VIDEO_JOB_ID.test(jobId)) throw videoJobNotFound();
    const range = request.headers.range;
    // The client leaving cancels the gRPC stream, which aborts the provider download.
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const stream = deps.videoJobs.downloadContent(
      { jobId, accountId: request.apiKey.accountId, range: typeof range === 'string' ? range : '' },
      { timeoutMs: DOWNLOAD_TIMEOUT_MS, signal: abort.signal },
    );
    const items = stream[Symbol.asyncIterator]();
    // A failure before the head (not found, provider down) is an ordinary error response.
    const first = await items.next();
    if (first.done || first.value.item.case !== 'head') throw new GatewayError('upstream_error', 'The video download could not be started.');
    const head = first.value.item.value;
    reply.code(head.status).headers(head.headers);
    if (head.status === 416) {
      await items.return?.();
      return reply.send();
    }
    // Backpressure end to end: the socket pulls from this stream, which pulls gRPC messages.
    return reply.send(Readable.from(chunks(items), { objectMode: false }));
  });
}

/**
 * video-jobs unreachable, or silent past the deadline: the job may or may not have been created
 * (and charged) meanwhile, so the generic "not charged" answer would be wrong. Domain errors pass.
 */
/**
 * video-jobs did not answer: the job may have been created. With an Idempotency-Key it runs and a
 * retry learns its id; without one nothing leads back to it, so video-jobs' recovery sweep
 * refunds and cancels it.
 */
function unconfirmed(err: unknown, withKey: boolean): never {
  if (!(err instanceof RpcError)) throw err;
  const message = withKey
    ? 'The video job could not be confirmed. If it was created it is charged and will run; retry with the same Idempotency-Key to get its job_id.'
    : 'The video job could not be confirmed. If it was created it is cancelled within minutes and its charge refunded; send the request again.';
  throw new GatewayError(err.grpcCode === status.DEADLINE_EXCEEDED ? 'upstream_timeout' : 'upstream_error', message);
}

/** The body bytes of a download, after its head. Ending early (client gone) cancels the stream. */
async function* chunks(items: AsyncIterator<videoV1.DownloadContentResponse>): AsyncGenerator<Uint8Array> {
  try {
    for (let next = await items.next(); !next.done; next = await items.next()) {
      if (next.value.item.case === 'chunk') yield next.value.item.value;
    }
  } finally {
    await items.return?.();
  }
}
