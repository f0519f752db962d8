import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Sim } from '../context.ts';
import { sendError } from '../errors.ts';
import { asArray, asInteger, asObject, asString, isObject } from '../json.ts';
import { decodeImageInput } from '../media/sniff.ts';
import { sendMp4, videoFor } from '../media/video.ts';
import { prepare, settingsFaultsHandled } from '../pipeline.ts';
import type { JsonObject } from '../types.ts';
import { phaseOf, type VideoJob } from '../videos/jobs.ts';
import { MAX_VIDEO_SECONDS, outcomeOf } from '../videos/outcome.ts';

const RESPONSE_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse';
const DEFAULT_SECONDS = 8;

/**
 * An image input of a Veo instance, in either shape the APIs use: `{inlineData: {mimeType, data}}`
 * (Gemini API) or `{bytesBase64Encoded, mimeType}` (Vertex). Undefined = absent, false = invalid.
 */
function imageInput(value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) return false;
  const data = asString(asObject(value.inlineData).data) ?? asString(value.bytesBase64Encoded);
  return data !== undefined && decodeImageInput(data) !== undefined;
}

function operationName(job: VideoJob): string {
  return `operations/${job.id}`;
}

function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** The long-running operation as the Gemini API reports it at this moment. */
function operation(job: VideoJob, request: FastifyRequest): JsonObject {
  const { phase } = phaseOf(job, Date.now());
  if (phase === 'queued' || phase === 'running') return { name: operationName(job), done: false };
  if (job.outcome === 'failed') {
    return { name: operationName(job), done: true, error: { code: 13, message: 'Video generation failed. (simulated)' } };
  }
  const generateVideoResponse: JsonObject =
    job.outcome === 'safety'
      ? {
          raiMediaFilteredCount: 1,
          raiMediaFilteredReasons: ['The prompt could not be processed because it violates the usage guidelines. (simulated)'],
        }
      : { generatedSamples: [{ video: { uri: `${origin(request)}/google/v1beta/files/${job.id}:download?alt=media` } }] };
  return { name: operationName(job), done: true, response: { '@type': RESPONSE_TYPE, generateVideoResponse } };
}

/** POST models/{model}:predictLongRunning: creates a Veo job and answers its operation. */
export async function predictLongRunning(
  sim: Sim,
  reply: FastifyReply,
  modelId: string,
  body: JsonObject,
): Promise<FastifyReply> {
  const instance = asObject(asArray(body.instances)[0]);
  const parameters = asObject(body.parameters);
  const prompt = asString(instance.prompt);
  if (prompt === undefined || prompt === '') return sendError(reply, 'google', 400, 'instances[0].prompt is required.');
  const aspect = asString(parameters.aspectRatio) ?? '16:9';
  if (aspect !== '16:9' && aspect !== '9:16') {
    return sendError(reply, 'google', 400, `aspectRatio must be "16:9" or "9:16", got "${aspect}".`);
  }
  const seconds = parameters.durationSeconds === undefined ? DEFAULT_SECONDS : asInteger(parameters.durationSeconds);
  if (seconds === undefined || seconds < 1 || seconds > MAX_VIDEO_SECONDS) {
    return sendError(reply, 'google', 400, `durationSeconds must be an integer between 1 and ${MAX_VIDEO_SECONDS}.`);
  }
  for (const [field, value] of [
    ['instances[0].image', instance.image],
    ['instances[0].lastFrame', instance.lastFrame],
    ['parameters.lastFrame', parameters.lastFrame],
  ] as const) {
    if (imageInput(value) === false) return sendError(reply, 'google', 400, `${field} is not a valid png, jpeg or webp image.`);
  }
  const ready = await prepare(sim, reply, { provider: 'google', modelId, kinds: ['video'], text: prompt, stream: false });
  if (!ready) return reply;
  const job = sim.state.videos.create(
    {
      provider: 'google',
      model: ready.model.id,
      delayMs: ready.effects.videoDelayMs ?? sim.state.defaultVideoDelayMs,
      seconds,
      aspectRatio: aspect,
      size: aspect === '16:9' ? '1280x720' : '720x1280',
      prompt,
      outcome: outcomeOf(ready.effects.fault),
    },
    'veo',
  );
  return reply.send({ name: operationName(job) });
}

function notFound(reply: FastifyReply, what: string): FastifyReply {
  return sendError(reply, 'google', 404, `${what} not found.`);
}

/** GET operations/{id} (also reachable as models/{model}/operations/{id}). */
export async function getOperation(sim: Sim, request: FastifyRequest, reply: FastifyReply, id: string): Promise<FastifyReply> {
  const job = sim.state.videos.get(id, 'google');
  if (!job) return notFound(reply, `Operation operations/${id}`);
  if (await settingsFaultsHandled(sim, reply, 'google', job.model)) return reply;
  return reply.send(operation(job, request));
}

/** POST operations/{id}:cancel stops the generation (the operation is gone afterwards); other actions are unknown. */
export async function cancelOperation(sim: Sim, reply: FastifyReply, idAndAction: string): Promise<FastifyReply> {
  const [id = '', action] = idAndAction.split(':');
  if (action !== 'cancel') return notFound(reply, `Method ${action ?? '(none)'}`);
  if (!sim.state.videos.get(id, 'google')) return notFound(reply, `Operation operations/${id}`);
  sim.state.videos.delete(id);
  return reply.send({});
}

/** GET files/{id}:download?alt=media streams the MP4 (with Range); without `:download`, file metadata. */
export async function getFile(
  sim: Sim,
  request: FastifyRequest,
  reply: FastifyReply,
  nameAndAction: string,
): Promise<FastifyReply> {
  const [id = '', action] = nameAndAction.split(':');
  const job = sim.state.videos.get(id, 'google');
  const ready = job !== undefined && job.outcome === 'success' && phaseOf(job, Date.now()).phase === 'completed';
  if (!job || !ready) return notFound(reply, `File files/${id}`);
  if (await settingsFaultsHandled(sim, reply, 'google', job.model)) return reply;
  const file = videoFor(job.aspectRatio, job.seconds);
  const alt = (request.query as Record<string, string | undefined>).alt;
  if (action === 'download' || alt === 'media') return sendMp4(request, reply, file);
  if (action !== undefined) return notFound(reply, `Method ${action}`);
  return reply.send({
    name: `files/${job.id}`,
    mimeType: 'video/mp4',
    sizeBytes: String(file.bytes.length),
    state: 'ACTIVE',
    uri: `${origin(request)}/google/v1beta/files/${job.id}`,
    downloadUri: `${origin(request)}/google/v1beta/files/${job.id}:download?alt=media`,
    videoMetadata: { videoDuration: `${file.seconds}s` },
  });
}
