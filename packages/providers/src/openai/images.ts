import { malformed } from '../errors.ts';
import { FORMAT_BY_MIME, MIME_BY_FORMAT } from '../image-formats.ts';
import { isRecord, recordsField, stringField } from '../json.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions, GeneratedImage, ImageMimeType, ImageRequest } from '../types.ts';
import { OPENAI_PATHS } from './api.ts';

/**
 * Reads `data[]` of an images answer: each item is `b64_json` or a `url`. The type comes from the
 * answer's `output_format`, else what we asked for, else PNG (the providers' default).
 */
export function imagesFromAnswer(
  ctx: ProviderContext,
  answer: unknown,
  wanted: ImageMimeType | undefined,
): GeneratedImage[] {
  const data = isRecord(answer) ? recordsField(answer, 'data') : undefined;
  if (data === undefined || data.length === 0) throw malformed(ctx.name, 'the answer holds no image');
  const format = isRecord(answer) ? stringField(answer, 'output_format') : undefined;
  const mimeType = (format === undefined ? undefined : MIME_BY_FORMAT[format]) ?? wanted ?? 'image/png';
  return data.map((item) => {
    const b64 = stringField(item, 'b64_json');
    if (b64 !== undefined) return { b64, mimeType };
    const url = stringField(item, 'url');
    if (url !== undefined) return { url, mimeType };
    throw malformed(ctx.name, 'an image has neither b64_json nor url');
  });
}

/** `POST {base}/images/generations` (JSON). */
export async function generateImages(
  ctx: ProviderContext,
  req: ImageRequest,
  opts?: CallOptions,
): Promise<GeneratedImage[]> {
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(OPENAI_PATHS.imageGenerations),
    json: {
      model: req.model,
      prompt: req.prompt,
      n: req.n,
      ...(req.size === undefined ? {} : { size: req.size }),
      ...(req.outputMimeType === undefined ? {} : { output_format: FORMAT_BY_MIME[req.outputMimeType] }),
    },
    timeoutMs: deadline(ctx, 'imageMs', opts),
    options: opts,
  });
  return imagesFromAnswer(ctx, answer, req.outputMimeType);
}
