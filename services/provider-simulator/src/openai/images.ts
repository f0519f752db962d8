import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Sim } from '../context.ts';
import { sendError } from '../errors.ts';
import { newId } from '../ids.ts';
import { asInteger, asObject, asString, isObject } from '../json.ts';
import {
  colorIndexFor,
  FILE_EXTENSIONS,
  type ImageFormat,
  MIME_TYPES,
  parseSize,
  renderImage,
} from '../media/images.ts';
import { decodeImageInput, type ImageInfo, sniffImage } from '../media/sniff.ts';
import { MultipartForm } from '../multipart.ts';
import { type Effects, prepare, type PrepareInput } from '../pipeline.ts';
import type { SimModel } from '../models.ts';
import { unixNow } from '../clock.ts';
import { textTokens } from '../tokens.ts';
import type { JsonObject } from '../types.ts';

/** Image tokens a 1024x1024 medium-quality image costs on gpt-image models; reported per image. */
const OUTPUT_TOKENS_PER_IMAGE = 1056;
const MAX_N = 10;

/** Reads a field from a JSON body or a multipart form alike. */
type FieldReader = (name: string) => unknown;

function readerOf(body: unknown): FieldReader {
  if (body instanceof MultipartForm) return (name) => body.text(name);
  const obj = asObject(body);
  return (name) => obj[name];
}

interface ImageOptions {
  n: number;
  width: number;
  height: number;
  format: ImageFormat;
  asUrl: boolean;
}

/** Validates n / size / output_format / response_format; returns an error message when invalid. */
function imageOptions(get: FieldReader, model: SimModel, fallback: { width: number; height: number }): ImageOptions | string {
  const nField = get('n');
  const n = nField === undefined || nField === null ? 1 : asInteger(nField);
  if (n === undefined || n < 1 || n > MAX_N) return `Invalid 'n': must be an integer between 1 and ${MAX_N}.`;
  const sizeField = asString(get('size')) ?? 'auto';
  const size = sizeField === 'auto' ? fallback : parseSize(sizeField);
  if (!size) return `Invalid 'size': '${sizeField}'. Expected 'auto' or WIDTHxHEIGHT.`;
  const formatField = (asString(get('output_format')) ?? 'png').toLowerCase();
  const format = formatField === 'jpg' ? 'jpeg' : formatField;
  if (format !== 'png' && format !== 'jpeg' && format !== 'webp') {
    return `Invalid 'output_format': '${formatField}'. Supported values are: 'png', 'jpeg' and 'webp'.`;
  }
  const responseFormat = asString(get('response_format')) ?? 'b64_json';
  if (responseFormat !== 'b64_json' && responseFormat !== 'url') return `Invalid 'response_format': '${responseFormat}'.`;
  return {
    n: model.oneImage ? 1 : n,
    width: size.width,
    height: size.height,
    format,
    asUrl: model.urlImage === true || responseFormat === 'url',
  };
}

function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

function imagesResponse(
  sim: Sim,
  request: FastifyRequest,
  opts: ImageOptions,
  prompt: string,
  seed: string,
  effects: Effects,
  inputImageCount: number,
): JsonObject {
  const data: JsonObject[] = [];
  for (let i = 0; i < opts.n; i++) {
    const colorIndex = colorIndexFor(seed, i);
    if (opts.asUrl) {
      const name = `${newId('img-')}.${FILE_EXTENSIONS[opts.format]}`;
      sim.state.storeImage(name, { format: opts.format, width: opts.width, height: opts.height, colorIndex });
      data.push({ url: `${origin(request)}/openai/files/${name}`, revised_prompt: prompt });
    } else {
      data.push({ b64_json: renderImage(opts.format, opts.width, opts.height, colorIndex).base64 });
    }
  }
  // URL-answering models imitate DALL-E, whose responses carry no usage or format fields.
  if (opts.asUrl) return { created: unixNow(), data };
  const out: JsonObject = {
    created: unixNow(),
    background: 'opaque',
    data,
    output_format: opts.format,
    quality: 'medium',
    size: `${opts.width}x${opts.height}`,
  };
  if (effects.fault?.kind !== 'no_usage') {
    const imageTokens = inputImageCount * 194;
    const inputTokens = textTokens(prompt) + imageTokens;
    const outputTokens = OUTPUT_TOKENS_PER_IMAGE * opts.n;
    out.usage = {
      input_tokens: inputTokens,
      input_tokens_details: { image_tokens: imageTokens, text_tokens: inputTokens - imageTokens },
      output_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
    };
  }
  return out;
}

/** Source images of an edit: multipart `image` / `image[]` files, or JSON `image` / `images[]` data. */
function editSources(body: unknown): { images: ImageInfo[]; invalid: boolean } {
  const infos: Array<ImageInfo | undefined> = [];
  if (body instanceof MultipartForm) {
    for (const file of [...body.files('image'), ...body.files('image[]')]) infos.push(sniffImage(file.data));
  } else {
    const obj = asObject(body);
    const refs = [obj.image, ...(Array.isArray(obj.images) ? obj.images : [])].filter((v) => v !== undefined && v !== null);
    for (const ref of refs) {
      const data = typeof ref === 'string' ? ref : isObject(ref) ? asString(ref.image_url) ?? asString(ref.b64_json) : undefined;
      infos.push(data === undefined ? undefined : decodeImageInput(data)?.info);
    }
  }
  const images = infos.filter((i): i is ImageInfo => i !== undefined);
  return { images, invalid: images.length !== infos.length };
}

const DEFAULT_SIZE = { width: 1024, height: 1024 };

export function registerImages(app: FastifyInstance, sim: Sim): void {
  app.post('/images/generations', async (request, reply) => {
    const get = readerOf(request.body);
    const prompt = asString(get('prompt'));
    if (prompt === undefined || prompt === '') return missing(reply, 'prompt');
    const ready = await prepare(sim, reply, imageInput(get, prompt));
    if (!ready) return reply;
    const opts = imageOptions(get, ready.model, DEFAULT_SIZE);
    if (typeof opts === 'string') return sendError(reply, 'openai', 400, opts);
    return reply.send(imagesResponse(sim, request, opts, prompt, prompt, ready.effects, 0));
  });

  app.post('/images/edits', async (request, reply) => {
    const get = readerOf(request.body);
    const prompt = asString(get('prompt'));
    if (prompt === undefined || prompt === '') return missing(reply, 'prompt');
    const sources = editSources(request.body);
    if (sources.invalid) {
      return sendError(reply, 'openai', 400, "Invalid file 'image': unsupported image format. Supported: png, jpeg, webp.", {
        param: 'image',
      });
    }
    const source = sources.images[0];
    if (!source) return missing(reply, 'image');
    const ready = await prepare(sim, reply, imageInput(get, prompt));
    if (!ready) return reply;
    const fits = source.width <= 4096 && source.height <= 4096;
    const opts = imageOptions(get, ready.model, fits ? source : DEFAULT_SIZE);
    if (typeof opts === 'string') return sendError(reply, 'openai', 400, opts);
    return reply.send(imagesResponse(sim, request, opts, prompt, `edit:${prompt}`, ready.effects, sources.images.length));
  });
}

function imageInput(get: FieldReader, prompt: string): PrepareInput {
  return { provider: 'openai', modelId: asString(get('model')), kinds: ['image'], text: prompt, stream: false };
}

function missing(reply: FastifyReply, param: string): FastifyReply {
  return sendError(reply, 'openai', 400, `Missing required parameter: '${param}'.`, { param });
}

/** GET /openai/files/:name: the images `gpt-sim-url-image` answered with (no auth, like signed URLs). */
export function registerImageFiles(app: FastifyInstance, sim: Sim): void {
  app.get<{ Params: { name: string } }>('/files/:name', async (request, reply) => {
    const stored = sim.state.storedImage(request.params.name);
    if (!stored) return sendError(reply, 'openai', 404, 'File not found or expired.', { code: 'not_found' });
    const image = renderImage(stored.format, stored.width, stored.height, stored.colorIndex);
    return reply.type(MIME_TYPES[stored.format]).send(image.bytes);
  });
}
