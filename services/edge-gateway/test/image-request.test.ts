import { billingV1 } from '@gw/contracts';
import { describe, expect, it } from 'vitest';
import { MAX_IMAGE_BASE64_CHARS } from '../src/generation/image-input.ts';
import { assertSizeFits, EDIT_BODY_LIMIT, editRequestOf, GENERATION_BODY_LIMIT, generationRequestOf } from '../src/generation/image-request.ts';
import { ImageEditRequest, ImageGenerationRequest } from '../src/schemas/media.ts';
import { parseBody } from '../src/schemas/problems.ts';
import type { ResolvedModel } from '../src/state/catalog-cache.ts';
import { refusal } from './support/refusal.ts';

/** A body as its route reads it: the schema (step 4), then the request the gateway goes on with. */
const parseGenerationBody = (body: unknown) => generationRequestOf(parseBody(ImageGenerationRequest, body));
const parseEditBody = (body: unknown) => editRequestOf(parseBody(ImageEditRequest, body));

const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);

function model(imageSizes: string[]): ResolvedModel {
  return {
    id: 'img',
    requested: 'img',
    kind: 'IMAGE',
    unit: billingV1.BillingUnit.IMAGE,
    price: 1n,
    routes: [],
    limits: { maxOutputTokens: 0, imageSizes, videoFirstFrame: false, videoLastFrame: false },
  };
}

describe('image request bodies', () => {
  it('defaults n to 1 and leaves size and output format to the model', () => {
    expect(parseGenerationBody({ model: 'img', prompt: 'a cat' })).toEqual({ model: 'img', prompt: 'a cat', n: 1, size: undefined, outputMimeType: undefined });
    expect(parseGenerationBody({ model: 'img', prompt: 'a cat', n: 4, size: '1536x1024', output_format: 'webp', response_format: 'b64_json' })).toMatchObject({
      n: 4,
      size: '1536x1024',
      outputMimeType: 'image/webp',
    });
  });

  it('counts the prompt in characters, not UTF-16 units', () => {
    expect(parseGenerationBody({ model: 'img', prompt: '🐱'.repeat(4000) }).prompt).toHaveLength(8000);
    expect(refusal(() => parseGenerationBody({ model: 'img', prompt: '🐱'.repeat(4001) })).message).toMatch(/prompt must be at most 4000 characters/);
  });

  it.each([
    ['not an object', [], /must be a JSON object/],
    ['no model', { prompt: 'x' }, /model is required/],
    ['no prompt', { model: 'img' }, /prompt is required/],
    ['a blank prompt', { model: 'img', prompt: '   ' }, /prompt is required/],
    ['a prompt of 4001 characters', { model: 'img', prompt: 'x'.repeat(4001) }, /at most 4000 characters/],
    ['n = 0', { model: 'img', prompt: 'x', n: 0 }, /n must be an integer from 1 to 4/],
    ['n = 5', { model: 'img', prompt: 'x', n: 5 }, /n must be an integer from 1 to 4/],
    ['n = 1.5', { model: 'img', prompt: 'x', n: 1.5 }, /n must be an integer/],
    ['n as a string', { model: 'img', prompt: 'x', n: '2' }, /n must be an integer/],
    ['size without x', { model: 'img', prompt: 'x', size: '1024' }, /size must have the form <width>x<height>/],
    ['size auto', { model: 'img', prompt: 'x', size: 'auto' }, /size must have the form/],
    ['a zero size', { model: 'img', prompt: 'x', size: '0x1024' }, /size must have the form/],
    ['an unknown output_format', { model: 'img', prompt: 'x', output_format: 'gif' }, /output_format must be png, jpeg or webp/],
    ['response_format url', { model: 'img', prompt: 'x', response_format: 'url' }, /always returned as base64/],
  ])('refuses %s', (_name, body, message) => {
    const err = refusal(() => parseGenerationBody(body));
    expect(err.code).toBe('invalid_request');
    expect(err.message).toMatch(message);
  });

  it('accepts null as not set, as OpenAI clients send it', () => {
    expect(parseGenerationBody({ model: 'img', prompt: 'a cat', n: null, size: null, output_format: null, response_format: null })).toEqual({
      model: 'img',
      prompt: 'a cat',
      n: 1,
      size: undefined,
      outputMimeType: undefined,
    });
  });

  it('names every problem at once', () => {
    expect(refusal(() => parseGenerationBody({ n: 9, size: 'big' })).message).toBe(
      'Invalid request: model is required (a model id from GET /models); prompt is required (a non-empty string); n must be an integer from 1 to 4; size must have the form <width>x<height>, e.g. 1024x1024.',
    );
  });

  it('an edit needs a valid source image', () => {
    const image = { b64_json: JPEG.toString('base64'), mime_type: 'image/jpeg' };
    const edit = parseEditBody({ model: 'img', prompt: 'make it blue', image });
    expect(edit.image.mimeType).toBe('image/jpeg');
    expect(edit.n).toBe(1);
    expect(refusal(() => parseEditBody({ model: 'img', prompt: 'x' })).message).toMatch(/image is required/);
    expect(refusal(() => parseEditBody({ model: 'img', prompt: 'x', image: { ...image, mime_type: 'image/webp' } })).message).toMatch(/declared as image\/webp/);
  });

  it('a size must be one the model declares, when it declares any', () => {
    expect(() => assertSizeFits('1024x1024', model(['1024x1024']))).not.toThrow();
    expect(() => assertSizeFits('333x777', model([]))).not.toThrow();
    expect(() => assertSizeFits(undefined, model(['1024x1024']))).not.toThrow();
    expect(refusal(() => assertSizeFits('512x512', model(['1024x1024', '1536x1024']))).message).toMatch(/size 512x512 is not offered by img; use one of 1024x1024, 1536x1024/);
  });

  it('body limits fit the largest valid request and little more', () => {
    const largestEdit = JSON.stringify({ model: 'x'.repeat(128), prompt: '🐱'.repeat(4000), image: { data_url: `data:image/jpeg;base64,${'A'.repeat(MAX_IMAGE_BASE64_CHARS)}` } });
    expect(EDIT_BODY_LIMIT).toBeGreaterThan(Buffer.byteLength(largestEdit));
    expect(EDIT_BODY_LIMIT).toBeLessThan(12 * 1024 * 1024);
    // A prompt escaped in full (\uXXXX per UTF-16 unit) still fits.
    const escapedPrompt = `"${[...'🐱'.repeat(4000)].map((c) => [...c].map((u) => `\\u${u.charCodeAt(0).toString(16)}`).join('')).join('')}"`;
    expect(GENERATION_BODY_LIMIT).toBeGreaterThan(escapedPrompt.length + 200);
    expect(GENERATION_BODY_LIMIT).toBeLessThan(256 * 1024);
  });
});
