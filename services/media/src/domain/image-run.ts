import { mediaV1, withinCharacters, type catalogV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { fetchProviderImage, malformed, ProviderError, type FallbackRouter, type GeneratedImage, type ProviderAdapter, type ProviderRegistry } from '@gw/providers';
import type { Logger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { IMAGE_MIME_TYPES, sniffImageType, type ImageMimeType } from '@gw/image-types';
import { abandonImageJob, claimRun, leaseEnd, recordOutput, renewClaim, type ImageOperationName, type StoredImage } from './image-jobs.ts';

export interface RunDeps {
  orm: MikroORM;
  /** The configured providers (a `ProviderRegistry`). */
  providers: Pick<ProviderRegistry, 'get'>;
  router: FallbackRouter;
  /** Bounds of downloading an image a provider answered with as a URL. */
  download: { maxBytes: number; timeoutMs: number };
  now: () => Date;
  logger: Logger;
  /** The lease of a job's claim, renewed every third of it while the provider works (default 60 s). */
  claimLeaseMs?: number;
}

const MIME_TYPES: readonly string[] = IMAGE_MIME_TYPES;
const MAX_PROMPT_CHARS = 4000;
const MAX_IMAGES = 4;

const OPERATIONS: Partial<Record<mediaV1.ImageOperation, ImageOperationName>> = {
  [mediaV1.ImageOperation.GENERATE]: 'generate',
  [mediaV1.ImageOperation.EDIT]: 'edit',
};

export function operationOf(operation: mediaV1.ImageOperation): ImageOperationName {
  const name = OPERATIONS[operation];
  if (!name) throw new GatewayError('invalid_request', 'operation must be GENERATE or EDIT.');
  return name;
}

/** What the provider is asked for; the gateway validated the public request, this guards the rpc. */
interface ImageCall {
  jobId: string;
  operation: ImageOperationName;
  prompt: string;
  n: number;
  size: string | undefined;
  output: ImageMimeType | undefined;
  source: { bytes: Uint8Array; mimeType: string } | undefined;
}

function callOf(req: mediaV1.RunImageJobRequest, operation: ImageOperationName): ImageCall {
  const problems: string[] = [];
  if (req.jobId === '' || req.accountId === '') problems.push('job_id and account_id are required');
  if (req.prompt.trim() === '' || !withinCharacters(req.prompt, MAX_PROMPT_CHARS)) problems.push(`prompt must have 1 to ${MAX_PROMPT_CHARS} characters`);
  if (req.n < 1 || req.n > MAX_IMAGES) problems.push(`n must be 1 to ${MAX_IMAGES}`);
  if (req.outputMimeType !== '' && !MIME_TYPES.includes(req.outputMimeType)) problems.push('output_mime_type is not supported');
  const source = req.source;
  if (operation === 'edit' && (!source || source.data.length === 0 || !MIME_TYPES.includes(source.mimeType))) {
    problems.push('an edit needs a PNG, JPEG or WebP source image');
  }
  if (problems.length > 0) throw new GatewayError('invalid_request', `Invalid image job: ${problems.join('; ')}.`);
  return {
    jobId: req.jobId,
    operation,
    prompt: req.prompt,
    n: req.n,
    size: req.size === '' ? undefined : req.size,
    output: req.outputMimeType === '' ? undefined : (req.outputMimeType as ImageMimeType),
    source: operation === 'edit' && source ? { bytes: source.data, mimeType: source.mimeType } : undefined,
  };
}

interface Produced {
  images: StoredImage[];
  provider: string;
}

/** The image's bytes: decoded, or downloaded from the provider's own hosts; typed by its magic bytes. */
async function inline(deps: RunDeps, adapter: ProviderAdapter, image: GeneratedImage, signal: AbortSignal): Promise<StoredImage> {
  let data: Uint8Array;
  if (image.b64 !== undefined) data = Buffer.from(image.b64, 'base64');
  else if (image.url !== undefined) {
    data = (await fetchProviderImage(image.url, adapter.imageHosts ?? [], { ...deps.download, signal })).bytes;
  } else throw malformed(adapter.name, 'an image has neither data nor a URL');
  const mimeType = sniffImageType(data);
  if (!mimeType) throw malformed(adapter.name, 'an image is not a PNG, JPEG or WebP');
  return { data, mimeType };
}

/**
 * One route's try: the provider call, then every image inlined. Inside the try, so an answer
 * whose images cannot be had (a broken URL, bytes that are no image) falls back like a failed call.
 */
async function attempt(deps: RunDeps, call: ImageCall, route: catalogV1.Route, signal: AbortSignal): Promise<Produced> {
  const adapter = deps.providers.get(route.provider);
  // A route to a provider this deployment has no credentials for is a configuration fault.
  if (!adapter) throw new GatewayError('upstream_error', `Provider ${route.provider} is not configured.`);
  const opts = { signal, requestId: call.jobId };
  const base = {
    model: route.upstreamModel,
    prompt: call.prompt,
    n: call.n,
    ...(call.size === undefined ? {} : { size: call.size }),
    ...(call.output === undefined ? {} : { outputMimeType: call.output }),
  };
  let generated: GeneratedImage[] | undefined;
  if (call.operation === 'generate') generated = await adapter.generateImages?.(base, opts);
  else if (call.source) generated = await adapter.editImage?.({ ...base, image: call.source }, opts);
  if (generated === undefined) {
    throw new ProviderError('upstream_error', `Provider ${adapter.name} does not offer image ${call.operation === 'generate' ? 'generation' : 'edits'}.`, {
      provider: adapter.name,
      retryable: true,
    });
  }
  // Never more than asked for: the hold covers `n` images.
  const images = await Promise.all(generated.slice(0, call.n).map((image) => inline(deps, adapter, image, signal)));
  return { images, provider: adapter.name };
}

/**
 * Provider failures leave as plain domain errors with their public code; the cause stays in our
 * log. A call cut off by its caller (the gateway's deadline) is a timeout, not an internal fault.
 */
function publicError(deps: RunDeps, jobId: string, err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) {
    deps.logger.warn({ jobId }, 'image job cancelled by its caller');
    return new GatewayError('upstream_timeout', 'The image job did not finish within its deadline.');
  }
  if (!(err instanceof ProviderError)) return err;
  deps.logger.warn({ jobId, provider: err.provider, code: err.code, upstreamStatus: err.upstreamStatus }, 'image job failed upstream');
  return new GatewayError(err.code, err.message);
}

/**
 * Runs a begun job: claims it (the provider is called at most once per job), calls the providers
 * with fallback and no database connection held, then records the output (kept only for a job
 * with an Idempotency-Key). A failure abandons the job, which frees its key; the gateway releases
 * its hold. The caller's deadline and cancellation abort the provider call.
 */
export async function runImageJob(deps: RunDeps, req: mediaV1.RunImageJobRequest, signal: AbortSignal): Promise<Produced> {
  const operation = operationOf(req.operation);
  const call = callOf(req, operation);
  const job = { jobId: req.jobId, accountId: req.accountId, operation };
  const lease = { claimLeaseMs: deps.claimLeaseMs };
  const { keepResult } = await claimRun(deps.orm.em.fork(), job, deps.now(), leaseEnd(lease, deps.now()));
  const started = Date.now();
  // This process holds the claim while the provider works: its lease is renewed until the run
  // ends. Should this process die, the renewals stop and the job is an orphan within a lease.
  const renewal = setInterval(() => {
    renewClaim(deps.orm.em.fork(), job.jobId, leaseEnd(lease, deps.now())).catch((err: unknown) =>
      deps.logger.warn({ err, jobId: job.jobId }, 'renewing an image job claim failed'),
    );
  }, Math.max(1, Math.floor((deps.claimLeaseMs ?? 60_000) / 3)));
  let produced: Produced;
  try {
    produced = await deps.router.withFallback(req.routes, (route) => attempt(deps, call, route, signal), { signal, account: req.accountId });
  } catch (err) {
    clearInterval(renewal);
    await abandonImageJob(deps.orm.em.fork(), job, deps.now()).catch((abandonErr: unknown) =>
      deps.logger.error({ err: abandonErr, jobId: job.jobId }, 'abandoning a failed image job failed'),
    );
    throw publicError(deps, job.jobId, err, signal);
  }
  clearInterval(renewal);
  const kept = await recordOutput(
    deps.orm.em.fork(),
    { jobId: job.jobId, provider: produced.provider, keepResult, leaseUntil: leaseEnd(lease, deps.now()) },
    produced.images,
  );
  if (!kept) throw new GatewayError('not_found', 'The image job was abandoned while the provider worked on it.');
  deps.logger.info(
    { jobId: job.jobId, operation, provider: produced.provider, requested: call.n, images: produced.images.length, ms: Date.now() - started },
    'image job produced',
  );
  return produced;
}
