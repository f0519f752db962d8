import { mediaV1, RpcError } from '@gw/contracts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { GatewayError } from '@gw/errors';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { holdFor, releaseHold, serviceObject, settleHold, type Charge, type Hold } from './metering.ts';
import type { ImageEditRequest, ImageGenerationRequest } from './image-request.ts';
import { IN_BACKGROUND, untilAnswered } from './retries.ts';
import { routesOf } from './text-request.ts';

/**
 * Deadline of the media call that runs the provider: the provider's own image deadline (360 s,
 * spec 4.7's longest client timeout) plus room for downloading URL answers and storing the result.
 * The default 5 s of internal calls would cut nearly every image off.
 */
export const IMAGE_RUN_TIMEOUT_MS = 390_000;

/** The response of spec 4.7/4.8, also served again by `GET /images/jobs/{job_id}`. */
export interface ImagesBody {
  created: number;
  data: Array<{ b64_json: string; mime_type: string }>;
  usage: { images: number };
  service: { credit_charged: number; balance_after: number };
}

export function imagesBody(images: readonly mediaV1.ImageData[], charge: Charge, createdMs: number): ImagesBody {
  return {
    created: Math.floor(createdMs / 1000),
    data: images.map((image) => ({ b64_json: Buffer.from(image.data).toString('base64'), mime_type: image.mimeType })),
    usage: { images: images.length },
    service: serviceObject(charge),
  };
}

/**
 * Records the settled charge with the job: media then keeps the result for the Idempotency-Key,
 * and the job can no longer go stale and be refunded. The client has paid and gets its images
 * whatever happens here. When media cannot be reached, the gateway keeps trying in the
 * background (recording is idempotent) instead of handing out the images for free.
 */
async function recordFinished(deps: GatewayDeps, log: FastifyBaseLogger, finished: MessageInitShape<typeof mediaV1.FinishImageJobRequestSchema>): Promise<void> {
  const finish = () => deps.media.finishImageJob(finished);
  try {
    await finish();
    return;
  } catch (err) {
    if (!(err instanceof RpcError)) {
      log.error({ err }, 'recording a finished image job failed; its result is not kept');
      return;
    }
    log.warn({ err }, 'recording a finished image job failed; retrying in the background');
  }
  // For 10 minutes: well inside media's 30, after which it abandons a running job and billing refunds it.
  untilAnswered(finish, IN_BACKGROUND).then(
    () => log.info('finished image job recorded on a retry'),
    (err: unknown) => log.error({ err }, 'recording a finished image job failed for good; media abandons it once stale and billing refunds it'),
  );
}

export interface ImageJobCall {
  endpoint: 'images/generations' | 'images/edits';
  request: ImageGenerationRequest | ImageEditRequest;
  model: ResolvedModel;
  /** Present when the client sent an Idempotency-Key. */
  idempotency: { key: string; bodyHash: Uint8Array } | undefined;
}

/**
 * Steps 7 to 9 of the order of checks and the settlement, for one image request: claim the job
 * (and its Idempotency-Key) in media, hold n x price, run the provider, settle to the images
 * actually returned and record the charge with the job. Any failure before the settlement
 * releases the hold and abandons the job, so nothing is charged and the key is free again.
 * The client going away does not stop the job: with a key, its paid result can still be fetched.
 */
export async function runImageJob(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply, call: ImageJobCall): Promise<ImagesBody> {
  const accountId = request.apiKey.accountId;
  const operation = call.endpoint === 'images/edits' ? mediaV1.ImageOperation.EDIT : mediaV1.ImageOperation.GENERATE;
  const { jobId } = await deps.media.beginImageJob({
    accountId,
    idempotencyKey: call.idempotency?.key ?? '',
    bodyHash: call.idempotency?.bodyHash ?? new Uint8Array(),
    operation,
  });
  const log = request.log.child({ jobId });
  // The job id is the request's id in billing (its hold, ledger entries and usage record), so the
  // client is shown that id from here on; the log lines of the request carry both.
  reply.header('x-request-id', jobId);
  // Frees the job's Idempotency-Key. Media away (it crashed under this very request, say): tried
  // again in the background, so a retry with the key runs anew once media is back, not only when
  // the job goes stale 30 minutes later. Abandoning is idempotent.
  const abandonJob = () => deps.media.abandonImageJob({ jobId, accountId });
  const abandon = () =>
    abandonJob().then(
      () => undefined,
      (err: unknown) => {
        if (!(err instanceof RpcError)) return log.error({ err }, 'abandoning an image job failed; media frees its key once it is stale');
        log.warn({ err }, 'abandoning an image job failed; retrying in the background');
        untilAnswered(abandonJob, IN_BACKGROUND).then(
          () => log.info('image job abandoned on a retry'),
          (last: unknown) => log.error({ err: last }, 'abandoning an image job failed for good; media frees its key once it is stale'),
        );
      },
    );

  let hold: Hold;
  try {
    // The job id is the hold's id: should this gateway die before the job is finished, media
    // abandons the job later and billing gives that hold back (released, or refunded if charged).
    hold = await holdFor(deps, request, { model: call.model, endpoint: call.endpoint, worstUnits: BigInt(call.request.n), text: false, requestId: jobId, log });
  } catch (err) {
    await abandon();
    throw err;
  }
  const fail = async (err: unknown): Promise<never> => {
    await releaseHold(deps.money, hold, log);
    await abandon();
    throw err;
  };

  let images: mediaV1.ImageData[];
  try {
    const source = 'image' in call.request ? { data: call.request.image.bytes, mimeType: call.request.image.mimeType } : undefined;
    const res = await deps.media.runImageJob(
      {
        jobId,
        accountId,
        operation,
        routes: routesOf(call.model),
        prompt: call.request.prompt,
        n: call.request.n,
        size: call.request.size ?? '',
        outputMimeType: call.request.outputMimeType ?? '',
        ...(source ? { source } : {}),
      },
      { timeoutMs: IMAGE_RUN_TIMEOUT_MS },
    );
    images = res.images;
  } catch (err) {
    return fail(err);
  }
  if (images.length === 0) return fail(new GatewayError('upstream_error', 'The provider returned no image. Nothing was charged.'));

  let charge: Charge;
  try {
    charge = await settleHold(deps, log, hold, { units: BigInt(images.length) });
  } catch (err) {
    return fail(err);
  }
  await recordFinished(deps, log, { jobId, accountId, creditCharged: charge.creditCharged, balanceAfter: charge.balanceAfter });
  log.info({ holdId: hold.requestId, model: call.model.id, requested: call.request.n, images: images.length }, 'image job charged');
  return imagesBody(images, charge, (deps.now ?? Date.now)());
}
