import { ProviderError, malformed } from '../errors.ts';
import { isRecord, recordField, recordsField, stringField } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions, GeneratedImage, ImageEditRequest, ImageRequest } from '../types.ts';
import { GOOGLE_PATHS } from './api.ts';

/** Aspect ratios Gemini image models accept in `imageConfig`; a `WxH` size maps onto one of them. */
const ASPECT_RATIOS = new Set(['1:1', '2:3', '3:2', '3:4', '4:3', '4:5', '5:4', '9:16', '16:9', '21:9']);

/** Finish or block reasons that mean a safety system refused the request. */
const REFUSAL_REASONS = /SAFETY|PROHIBITED|BLOCKLIST|SPII|RECITATION/;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** `1024x1024` → `1:1`; undefined when the size is absent or no supported ratio. */
export function aspectRatioOf(size: string | undefined): string | undefined {
  const match = size === undefined ? null : /^(\d+)x(\d+)$/.exec(size);
  if (match === null) return undefined;
  const width = Number(match[1]);
  const height = Number(match[2]);
  if (width === 0 || height === 0) return undefined;
  const divisor = gcd(width, height);
  const ratio = `${width / divisor}:${height / divisor}`;
  return ASPECT_RATIOS.has(ratio) ? ratio : undefined;
}

/** Collects `inlineData` images of every candidate; explains an answer that has none. */
export function imagesFromAnswer(ctx: ProviderContext, answer: unknown): GeneratedImage[] {
  if (!isRecord(answer)) throw malformed(ctx.name, 'the answer is not an object');
  const candidates = recordsField(answer, 'candidates') ?? [];
  const images: GeneratedImage[] = [];
  for (const candidate of candidates) {
    for (const part of recordsField(recordField(candidate, 'content') ?? {}, 'parts') ?? []) {
      const inline = recordField(part, 'inlineData') ?? recordField(part, 'inline_data');
      const data = inline === undefined ? undefined : stringField(inline, 'data');
      if (inline === undefined || data === undefined) continue;
      images.push({ b64: data, mimeType: stringField(inline, 'mimeType') ?? stringField(inline, 'mime_type') ?? 'image/png' });
    }
  }
  if (images.length > 0) return images;
  const refusal = [
    stringField(recordField(answer, 'promptFeedback') ?? {}, 'blockReason'),
    ...candidates.map((candidate) => stringField(candidate, 'finishReason')),
  ].find((reason) => reason !== undefined && REFUSAL_REASONS.test(reason));
  if (refusal !== undefined) {
    // The request's content was refused: another route would refuse it too.
    throw new ProviderError('invalid_request', `The provider declined to produce the image (${refusal})`, {
      provider: ctx.name,
      retryable: false,
    });
  }
  throw malformed(ctx.name, 'the answer holds no image');
}

/** One generateContent call that asks for image output. Gemini image models give one image per call. */
async function imageCall(
  ctx: ProviderContext,
  model: string,
  parts: JsonRecord[],
  size: string | undefined,
  opts: CallOptions | undefined,
): Promise<GeneratedImage[]> {
  const aspectRatio = aspectRatioOf(size);
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(GOOGLE_PATHS.generateContent(model)),
    json: {
      contents: [{ role: 'user', parts }],
      generationConfig: {
        responseModalities: ['TEXT', 'IMAGE'],
        ...(aspectRatio === undefined ? {} : { imageConfig: { aspectRatio } }),
      },
    },
    timeoutMs: deadline(ctx, 'imageMs', opts),
    options: opts,
  });
  return imagesFromAnswer(ctx, answer);
}

/** Image generation through generateContent with image output modality. */
export function generateImages(ctx: ProviderContext, req: ImageRequest, opts?: CallOptions): Promise<GeneratedImage[]> {
  return imageCall(ctx, req.model, [{ text: req.prompt }], req.size, opts);
}

/** Image edit: the same call with the source image as an `inlineData` part before the instruction. */
export function editImage(ctx: ProviderContext, req: ImageEditRequest, opts?: CallOptions): Promise<GeneratedImage[]> {
  const source = { inlineData: { mimeType: req.image.mimeType, data: Buffer.from(req.image.bytes).toString('base64') } };
  return imageCall(ctx, req.model, [source, { text: req.prompt }], req.size, opts);
}
