import { withinCharacters } from '@gw/contracts';
import { z } from 'zod';

/**
 * The image and video request bodies (spec 4.7 to 4.9, limits of spec 8): one schema each, which
 * validates the shape (step 4 of the order of checks), types the route's body and documents it.
 * What a source image holds (base64, size, bytes of the declared type) is read after, by
 * `decodeImageInput`.
 */

export const MAX_PROMPT_CHARS = 4000;
const MAX_IMAGES = 4;
const VIDEO_DURATIONS = [4, 6, 8] as const;
const ASPECT_RATIOS = ['16:9', '9:16'] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];
/** OpenAI's `output_format` (an extension here: the providers that let the caller choose use it). */
export const OUTPUT_FORMATS = ['png', 'jpeg', 'webp'] as const;

const SIZE = /^([1-9]\d{0,4})x([1-9]\d{0,4})$/;

const modelId = (which: string) => {
  const message = `is required (${which} from GET /models)`;
  return z.string({ error: message }).min(1, message);
};

const NON_EMPTY = 'is required (a non-empty string)';
/** At most 4000 characters (code points, not UTF-16 units). */
const prompt = () =>
  z
    .string({ error: NON_EMPTY })
    .refine((text) => text.trim() !== '', NON_EMPTY)
    .refine((text) => withinCharacters(text, MAX_PROMPT_CHARS), `must be at most ${MAX_PROMPT_CHARS} characters`)
    .meta({ description: `At most ${MAX_PROMPT_CHARS} characters.` });

/** Spec 2.4's two forms; what they hold is checked when decoded. */
const imageInput = () =>
  z.looseObject(
    {
      b64_json: z.string({ error: 'must be a base64 string' }).optional(),
      data_url: z.string({ error: 'must be a string' }).optional(),
      mime_type: z.enum(['image/png', 'image/jpeg', 'image/webp'], { error: 'must be image/png, image/jpeg or image/webp' }).optional(),
    },
    {
      error: (issue) =>
        issue.input === undefined || issue.input === null ? 'is required (b64_json with mime_type, or data_url)' : 'must be an object with b64_json and mime_type, or data_url',
    },
  );

const imageFields = {
  model: modelId('a model id'),
  prompt: prompt(),
  n: z
    .number({ error: `must be an integer from 1 to ${MAX_IMAGES}` })
    .int(`must be an integer from 1 to ${MAX_IMAGES}`)
    .min(1, `must be an integer from 1 to ${MAX_IMAGES}`)
    .max(MAX_IMAGES, `must be an integer from 1 to ${MAX_IMAGES}`)
    .nullish()
    .meta({ default: 1 }),
  size: z.string({ error: 'must have the form <width>x<height>, e.g. 1024x1024' }).regex(SIZE, 'must have the form <width>x<height>, e.g. 1024x1024').nullish(),
  output_format: z.enum(OUTPUT_FORMATS, { error: 'must be png, jpeg or webp' }).nullish(),
  response_format: z.literal('b64_json', { error: 'can only be b64_json: images are always returned as base64' }).nullish(),
};

const BODY = { error: 'the request body must be a JSON object' };

export const ImageGenerationRequest = z.looseObject(imageFields, BODY);
export type ImageGenerationBody = z.output<typeof ImageGenerationRequest>;

export const ImageEditRequest = z.looseObject(
  { ...imageFields, image: imageInput().meta({ description: 'The source image: `b64_json` with `mime_type`, or a `data:` URL. PNG, JPEG or WEBP, at most 8 MB decoded.' }) },
  BODY,
);
export type ImageEditBody = z.output<typeof ImageEditRequest>;

export const VideoRequest = z
  .looseObject(
    {
      model: modelId('a VIDEO model id'),
      // Stored until the job is submitted, and Postgres text cannot hold a NUL.
      prompt: prompt().refine((text) => !text.includes('\u0000'), 'must not contain the NUL character (U+0000)'),
      duration_seconds: z.literal(VIDEO_DURATIONS, { error: 'is required and must be 4, 6 or 8' }),
      aspect_ratio: z.enum(ASPECT_RATIOS, { error: 'must be "16:9" or "9:16"' }).nullish().meta({ default: '16:9' }),
      image: imageInput().nullish().meta({ description: 'The first frame (image to video), in the form of `image` on image edits.' }),
      last_frame: imageInput().nullish().meta({ description: 'The last frame; only together with `image`.' }),
    },
    BODY,
  )
  .check((ctx) => {
    const { image, last_frame: lastFrame } = ctx.value;
    if (lastFrame != null && image == null) {
      ctx.issues.push({ code: 'custom', message: 'must be sent together with image (the first frame)', input: lastFrame, path: ['last_frame'] });
    }
  });
export type VideoBody = z.output<typeof VideoRequest>;
