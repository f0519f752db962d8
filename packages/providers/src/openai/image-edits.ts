import { FormData } from 'undici';
import { FORMAT_BY_MIME, blobOf, fileNameFor } from '../image-formats.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions, GeneratedImage, ImageEditRequest } from '../types.ts';
import { OPENAI_PATHS } from './api.ts';
import { imagesFromAnswer } from './images.ts';

/** `POST {base}/images/edits` as multipart/form-data with the source as the `image` file. */
export async function editImage(
  ctx: ProviderContext,
  req: ImageEditRequest,
  opts?: CallOptions,
): Promise<GeneratedImage[]> {
  const form = new FormData();
  form.append('model', req.model);
  form.append('prompt', req.prompt);
  form.append('n', String(req.n));
  if (req.size !== undefined) form.append('size', req.size);
  if (req.outputMimeType !== undefined) form.append('output_format', FORMAT_BY_MIME[req.outputMimeType]);
  form.append('image', blobOf(req.image.bytes, req.image.mimeType), fileNameFor('image', req.image.mimeType));
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(OPENAI_PATHS.imageEdits),
    form,
    timeoutMs: deadline(ctx, 'imageMs', opts),
    options: opts,
  });
  return imagesFromAnswer(ctx, answer, req.outputMimeType);
}
