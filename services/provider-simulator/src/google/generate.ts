import type { FastifyReply } from 'fastify';
import type { Sim } from '../context.ts';
import { planReply, type Plan, splitDeltas } from '../engine.ts';
import { sendError } from '../errors.ts';
import { newId } from '../ids.ts';
import { asArray, asInteger, asObject, asString } from '../json.ts';
import { colorIndexFor, formatFromMime, type ImageFormat, MAX_IMAGE_SIDE, renderImage } from '../media/images.ts';
import { decodeImageInput } from '../media/sniff.ts';
import type { SimModel } from '../models.ts';
import { type Effects, prepare } from '../pipeline.ts';
import { SseStream } from '../sse.ts';
import { MALFORMED_EVENT_DATA, STREAM_ERROR_MESSAGE, streamCut } from '../stream-faults.ts';
import type { JsonObject } from '../types.ts';
import { geminiConversation, geminiPromptTokens, lastUserInlineImage } from './conversation.ts';

/** Output tokens Gemini reports per generated image. */
const IMAGE_TOKENS = 1290;

const ASPECT_SIZES: Record<string, [number, number]> = {
  '1:1': [1024, 1024],
  '2:3': [832, 1248],
  '3:2': [1248, 832],
  '3:4': [864, 1184],
  '4:3': [1184, 864],
  '4:5': [896, 1152],
  '5:4': [1152, 896],
  '9:16': [768, 1344],
  '16:9': [1344, 768],
  '21:9': [1536, 672],
};

interface ImagePlan {
  format: ImageFormat;
  width: number;
  height: number;
  count: number;
  withText: boolean;
}

/** What an image model should draw, or an error message. */
function imagePlan(body: JsonObject): ImagePlan | string {
  const config = asObject(body.generationConfig);
  const imageConfig = asObject(config.imageConfig);
  const mime =
    asString(asObject(imageConfig.imageOutputOptions).mimeType) ?? asString(imageConfig.mimeType) ?? 'image/png';
  const format = formatFromMime(mime);
  if (!format) return `Unsupported output image mime type: ${mime}.`;
  const aspect = asString(imageConfig.aspectRatio);
  let size: [number, number] = ASPECT_SIZES['1:1']!;
  if (aspect !== undefined) {
    const known = ASPECT_SIZES[aspect];
    if (!known) return `Unsupported aspect ratio: ${aspect}.`;
    size = known;
  } else {
    const source = lastUserInlineImage(body);
    const info = source === undefined ? undefined : decodeImageInput(source)?.info;
    if (info && info.width <= MAX_IMAGE_SIDE && info.height <= MAX_IMAGE_SIDE) size = [info.width, info.height];
  }
  const modalities = asArray(config.responseModalities).map((m) => String(m).toUpperCase());
  const count = asInteger(config.candidateCount) ?? 1;
  if (count < 1 || count > 4) return 'candidateCount must be between 1 and 4.';
  return { format, width: size[0], height: size[1], count, withText: modalities.length === 0 || modalities.includes('TEXT') };
}

function finishReason(plan: Plan): string {
  return plan.kind === 'text' && plan.finish === 'length' ? 'MAX_TOKENS' : 'STOP';
}

/** Gemini counts thoughts apart from the candidates: `thoughtsTokenCount`, in the total. */
function usageMetadata(promptTokens: number, outputTokens: number, imageTokens: number, thoughtTokens = 0): JsonObject {
  const meta: JsonObject = {
    promptTokenCount: promptTokens,
    candidatesTokenCount: outputTokens - thoughtTokens,
    totalTokenCount: promptTokens + outputTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptTokens }],
  };
  if (thoughtTokens > 0) meta.thoughtsTokenCount = thoughtTokens;
  if (imageTokens > 0) meta.candidatesTokensDetails = [{ modality: 'IMAGE', tokenCount: imageTokens }];
  return meta;
}

/** Everything one generateContent call produces, before it is rendered whole or as a stream. */
interface Generation {
  model: SimModel;
  plan: Plan;
  images: Array<{ inlineData: { mimeType: string; data: string } }>;
  usage: JsonObject | undefined;
  responseId: string;
  effects: Effects;
}

async function generate(
  sim: Sim,
  reply: FastifyReply,
  modelId: string,
  body: JsonObject,
  stream: boolean,
): Promise<Generation | undefined> {
  if (asArray(body.contents).length === 0) {
    sendError(reply, 'google', 400, '* GenerateContentRequest.contents: contents is not specified');
    return undefined;
  }
  const conv = geminiConversation(body);
  const ready = await prepare(sim, reply, {
    provider: 'google',
    modelId,
    kinds: ['text', 'image'],
    text: conv.lastUserText,
    stream,
  });
  if (!ready) return undefined;
  const config = asObject(body.generationConfig);
  const wantsImage = asArray(config.responseModalities).some((m) => String(m).toUpperCase() === 'IMAGE');
  if (ready.model.kind === 'text' && wantsImage) {
    sendError(reply, 'google', 400, `Model ${ready.model.id} does not support the requested response modalities: image`);
    return undefined;
  }
  const images: Generation['images'] = [];
  let imagePlanned: ImagePlan | undefined;
  if (ready.model.kind === 'image') {
    const planned = imagePlan(body);
    if (typeof planned === 'string') {
      sendError(reply, 'google', 400, planned);
      return undefined;
    }
    imagePlanned = planned;
    for (let i = 0; i < planned.count; i++) {
      const image = renderImage(planned.format, planned.width, planned.height, colorIndexFor(conv.lastUserText, i));
      images.push({ inlineData: { mimeType: image.mimeType, data: image.base64 } });
    }
  }
  const maxTokens = asInteger(config.maxOutputTokens);
  let plan = planReply(conv, ready.effects, maxTokens !== undefined && maxTokens > 0 ? maxTokens : undefined);
  // An image model asked for IMAGE only answers with images and no text.
  if (imagePlanned && !imagePlanned.withText && plan.kind === 'text') {
    plan = { kind: 'text', text: '', finish: 'stop', outputTokens: 0 };
  }
  const imageTokens = IMAGE_TOKENS * images.length;
  const usage =
    ready.effects.fault?.kind === 'no_usage'
      ? undefined
      : usageMetadata(geminiPromptTokens(body), plan.outputTokens + imageTokens, imageTokens, plan.reasoning?.tokens);
  return { model: ready.model, plan, images, usage, responseId: newId('sim'), effects: ready.effects };
}

function candidate(parts: JsonObject[], index: number, finish: string | undefined): JsonObject {
  const c: JsonObject = { content: { parts, role: 'model' }, index };
  if (finish !== undefined) c.finishReason = finish;
  return c;
}

/** The thought summary an answer starts with, when it thought and the request asked to see it. */
function thoughtParts(plan: Plan): JsonObject[] {
  return plan.reasoning ? [{ text: plan.reasoning.text, thought: true }] : [];
}

/**
 * The call part. After thinking, Gemini signs the thinking on the call (`thoughtSignature`, opaque,
 * to be sent back with the call in the next turn).
 */
function callPart(plan: Extract<Plan, { kind: 'tool' }>): JsonObject {
  const part: JsonObject = { functionCall: { name: plan.name, args: plan.args } };
  if (plan.reasoning) part.thoughtSignature = Buffer.from(`sim-thought-signature:${plan.reasoning.text.length}`).toString('base64');
  return part;
}

function wholeResponse(gen: Generation): JsonObject {
  const { plan } = gen;
  let candidates: JsonObject[];
  if (plan.kind === 'tool') {
    candidates = [candidate([...thoughtParts(plan), callPart(plan)], 0, 'STOP')];
  } else if (gen.images.length > 0) {
    // One candidate per image, each with the (optional) text first, as Gemini image models answer.
    candidates = gen.images.map((img, i) => candidate([...(plan.text === '' ? [] : [{ text: plan.text }]), img], i, 'STOP'));
  } else {
    candidates = [candidate([...thoughtParts(plan), { text: plan.text }], 0, finishReason(plan))];
  }
  const out: JsonObject = { candidates };
  if (gen.usage) out.usageMetadata = gen.usage;
  out.modelVersion = gen.model.id;
  out.responseId = gen.responseId;
  return out;
}

/** The chunks of a streamed answer: text deltas, the last one with finishReason, usage and any images. */
function streamChunks(gen: Generation): JsonObject[] {
  const { plan } = gen;
  const tag = (c: JsonObject): JsonObject => ({ ...c, modelVersion: gen.model.id, responseId: gen.responseId });
  const last = (parts: JsonObject[], finish: string): JsonObject =>
    tag({ candidates: [candidate(parts, 0, finish)], ...(gen.usage ? { usageMetadata: gen.usage } : {}) });
  const thoughts = thoughtParts(plan).map((part) => tag({ candidates: [candidate([part], 0, undefined)] }));
  if (plan.kind === 'tool') return [...thoughts, last([callPart(plan)], 'STOP')];
  const deltas = splitDeltas(plan.text);
  const chunks = [...thoughts, ...deltas.slice(0, -1).map((d) => tag({ candidates: [candidate([{ text: d }], 0, undefined)] }))];
  const finalText = deltas.at(-1);
  const textParts: JsonObject[] = finalText === undefined ? [] : [{ text: finalText }];
  if (gen.images.length === 0) {
    chunks.push(last(textParts, finishReason(plan)));
    return chunks;
  }
  // Images come whole in the last chunk, one candidate each as in the non-streamed answer.
  const candidates = gen.images.map((img, i) => candidate([...(i === 0 ? textParts : []), img], i, 'STOP'));
  chunks.push(tag({ candidates, ...(gen.usage ? { usageMetadata: gen.usage } : {}) }));
  return chunks;
}

export async function generateContent(sim: Sim, reply: FastifyReply, modelId: string, body: JsonObject): Promise<FastifyReply> {
  const gen = await generate(sim, reply, modelId, body, false);
  if (!gen) return reply;
  return reply.send(wholeResponse(gen));
}

/**
 * `?alt=sse`: `data: {GenerateContentResponse}` events separated by CRLF CRLF, as Google sends them.
 * Without `alt=sse` the API answers one JSON array of the same chunks.
 */
export async function streamGenerateContent(
  sim: Sim,
  reply: FastifyReply,
  modelId: string,
  body: JsonObject,
  sse: boolean,
): Promise<FastifyReply> {
  const gen = await generate(sim, reply, modelId, body, true);
  if (!gen) return reply;
  const chunks = streamChunks(gen);
  const cut = streamCut(gen.effects.fault, Math.max(0, chunks.length - 1));
  if (!sse) {
    if (cut) return reply.type('application/json').send(`[${chunks.slice(0, cut.at).map((c) => JSON.stringify(c)).join(',')},`);
    return reply.send(chunks);
  }
  const stream = new SseStream(reply, { delayMs: gen.effects.chunkDelayMs, eol: '\r\n' });
  for (let i = 0; i < chunks.length; i++) {
    if (cut?.at === i) {
      if (cut.kind === 'malformed') await stream.event(undefined, MALFORMED_EVENT_DATA);
      else await stream.event(undefined, { error: { code: 500, message: STREAM_ERROR_MESSAGE, status: 'INTERNAL' } });
      break;
    }
    if (!(await stream.event(undefined, chunks[i]))) break;
  }
  stream.end();
  return reply;
}

export function countGeminiTokens(body: JsonObject): JsonObject {
  const inner = asObject(body.generateContentRequest);
  const request = body.generateContentRequest === undefined ? body : inner;
  const total = geminiPromptTokens(request);
  return { totalTokens: total, promptTokensDetails: [{ modality: 'TEXT', tokenCount: total }] };
}

/** :countTokens applies the same model check and faults as generation. */
export async function countTokensHandler(
  sim: Sim,
  reply: FastifyReply,
  modelId: string,
  body: JsonObject,
): Promise<FastifyReply> {
  const request = body.generateContentRequest === undefined ? body : asObject(body.generateContentRequest);
  const conv = geminiConversation(request);
  const ready = await prepare(sim, reply, {
    provider: 'google',
    modelId,
    kinds: ['text', 'image'],
    text: conv.lastUserText,
    stream: false,
  });
  if (!ready) return reply;
  return reply.send(countGeminiTokens(body));
}
