import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Sim } from '../context.ts';
import { sendError } from '../errors.ts';
import { asInteger, asObject, asString, isObject } from '../json.ts';
import { renderImage } from '../media/images.ts';
import { decodeImageInput, sniffImage } from '../media/sniff.ts';
import { sendMp4, videoFor } from '../media/video.ts';
import { MultipartForm } from '../multipart.ts';
import { prepare, settingsFaultsHandled } from '../pipeline.ts';
import type { JsonObject } from '../types.ts';
import { completedAtMs, phaseOf, type VideoJob } from '../videos/jobs.ts';
import { aspectOfSize, MAX_VIDEO_SECONDS, outcomeOf } from '../videos/outcome.ts';

/** Sora keeps finished assets downloadable for about an hour. */
const ASSET_TTL_SECONDS = 3600;
const DEFAULT_MODEL = 'sora-sim';

function soraVideo(job: VideoJob, nowMs: number): JsonObject {
  const { phase, progress } = phaseOf(job, nowMs);
  const finished = phase === 'completed' || phase === 'failed';
  const completedAt = finished ? Math.floor(completedAtMs(job) / 1000) : null;
  let error: JsonObject | null = null;
  if (phase === 'failed') {
    error =
      job.outcome === 'safety'
        ? { code: 'moderation_blocked', message: 'Your request was blocked by our moderation system. (simulated)' }
        : { code: 'internal_error', message: 'Video generation failed. (simulated)' };
  }
  return {
    id: job.id,
    object: 'video',
    created_at: Math.floor(job.createdAtMs / 1000),
    completed_at: completedAt,
    expires_at: phase === 'completed' && completedAt !== null ? completedAt + ASSET_TTL_SECONDS : null,
    error,
    model: job.model,
    progress,
    prompt: job.prompt,
    remixed_from_video_id: null,
    seconds: String(job.seconds),
    size: job.size,
    status: phase === 'running' ? 'in_progress' : phase,
  };
}

/** The optional first frame: a multipart file, or `{image_url}` (data URL) in JSON or as a form field. */
function referenceIsValid(body: unknown): boolean {
  if (body instanceof MultipartForm) {
    const files = body.files('input_reference');
    const url = body.text('input_reference[image_url]') ?? body.text('input_reference');
    if (files.some((f) => sniffImage(f.data) === undefined)) return false;
    return url === undefined || decodeImageInput(url) !== undefined;
  }
  const ref = asObject(body).input_reference;
  if (ref === undefined || ref === null) return true;
  const url = typeof ref === 'string' ? ref : isObject(ref) ? asString(ref.image_url) : undefined;
  return url !== undefined && decodeImageInput(url) !== undefined;
}

function notFound(reply: FastifyReply, id: string): FastifyReply {
  return sendError(reply, 'openai', 404, `Video with id '${id}' not found.`, { code: 'not_found', param: 'video_id' });
}

export function registerVideos(app: FastifyInstance, sim: Sim): void {
  app.post('/videos', async (request, reply) => {
    const body = request.body;
    const get = body instanceof MultipartForm ? (k: string) => body.text(k) : (k: string) => asObject(body)[k];
    const prompt = asString(get('prompt'));
    if (prompt === undefined || prompt === '') {
      return sendError(reply, 'openai', 400, "Missing required parameter: 'prompt'.", { param: 'prompt' });
    }
    const secondsField = get('seconds');
    const seconds = secondsField === undefined ? 4 : asInteger(secondsField);
    if (seconds === undefined || seconds < 1 || seconds > MAX_VIDEO_SECONDS) {
      return sendError(reply, 'openai', 400, `Invalid 'seconds': must be an integer between 1 and ${MAX_VIDEO_SECONDS}.`, {
        param: 'seconds',
      });
    }
    const size = asString(get('size')) ?? '720x1280';
    const dims = /^(\d+)x(\d+)$/.exec(size);
    if (!dims) return sendError(reply, 'openai', 400, `Invalid 'size': '${size}'.`, { param: 'size' });
    if (!referenceIsValid(body)) {
      return sendError(reply, 'openai', 400, "Invalid 'input_reference': expected a png, jpeg or webp image.", {
        param: 'input_reference',
      });
    }
    const modelId = asString(get('model')) ?? DEFAULT_MODEL;
    const ready = await prepare(sim, reply, { provider: 'openai', modelId, kinds: ['video'], text: prompt, stream: false });
    if (!ready) return reply;
    const job = sim.state.videos.create(
      {
        provider: 'openai',
        model: ready.model.id,
        delayMs: ready.effects.videoDelayMs ?? sim.state.defaultVideoDelayMs,
        seconds,
        aspectRatio: aspectOfSize(Number(dims[1]), Number(dims[2])),
        size,
        prompt,
        outcome: outcomeOf(ready.effects.fault),
      },
      'video_sim',
    );
    return reply.send(soraVideo(job, Date.now()));
  });

  app.get<{ Params: { id: string } }>('/videos/:id', async (request, reply) => {
    const job = sim.state.videos.get(request.params.id, 'openai');
    if (!job) return notFound(reply, request.params.id);
    if (await settingsFaultsHandled(sim, reply, 'openai', job.model)) return reply;
    return reply.send(soraVideo(job, Date.now()));
  });

  app.delete<{ Params: { id: string } }>('/videos/:id', async (request, reply) => {
    const job = sim.state.videos.get(request.params.id, 'openai');
    if (!job) return notFound(reply, request.params.id);
    sim.state.videos.delete(job.id);
    return reply.send({ id: job.id, object: 'video.deleted', deleted: true });
  });

  app.get<{ Params: { id: string }; Querystring: { variant?: string } }>('/videos/:id/content', async (request, reply) => {
    const job = sim.state.videos.get(request.params.id, 'openai');
    if (!job) return notFound(reply, request.params.id);
    if (await settingsFaultsHandled(sim, reply, 'openai', job.model)) return reply;
    const now = Date.now();
    const video = soraVideo(job, now);
    if (video.status !== 'completed') {
      return sendError(reply, 'openai', 400, `Video '${job.id}' is not completed (status: ${String(video.status)}).`, {
        code: 'video_not_ready',
      });
    }
    if (typeof video.expires_at === 'number' && now / 1000 > video.expires_at) return notFound(reply, job.id);
    const variant = request.query.variant ?? 'video';
    if (variant === 'thumbnail' || variant === 'spritesheet') {
      const [w, h] = job.aspectRatio === '16:9' ? [320, 180] : [180, 320];
      const image = renderImage(variant === 'thumbnail' ? 'webp' : 'jpeg', w, h, 0);
      return reply.type(image.mimeType).send(image.bytes);
    }
    if (variant !== 'video') return sendError(reply, 'openai', 400, `Invalid 'variant': '${variant}'.`, { param: 'variant' });
    return sendMp4(request, reply, videoFor(job.aspectRatio, job.seconds));
  });
}
