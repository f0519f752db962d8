import { describe, expect, it } from 'vitest';
import { estimateInputTokensUpperBound, IMAGE_TOKEN_ALLOWANCE, REQUEST_TOKEN_ALLOWANCE } from '../src/index.ts';

const bytesOf = (body: unknown) => Buffer.byteLength(JSON.stringify(body));

describe('estimateInputTokensUpperBound', () => {
  it('walks a flat array of a million numbers without overflowing the stack', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], metadata: { n: Array.from({ length: 1_000_000 }, (_, i) => i) } };
    expect(estimateInputTokensUpperBound(body)).toBe(bytesOf(body) + REQUEST_TOKEN_ALLOWANCE);
  });

  it('walks an object of 100,000 members', () => {
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, { type: 'text' }]));
    expect(estimateInputTokensUpperBound(wide)).toBe(bytesOf(wide) + REQUEST_TOKEN_ALLOWANCE);
  });

  it('counts image parts of every dialect, at any depth, in wide arrays too', () => {
    const parts = [
      { type: 'image_url', image_url: { url: 'https://x/a.png' } },
      { type: 'image', source: { type: 'url', url: 'https://x/b.png' } },
      { type: 'input_image', image_url: 'https://x/c.png' },
      { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
      { fileData: { fileUri: 'gs://x' } },
    ];
    const body = { messages: [{ role: 'user', content: [...Array.from({ length: 200_000 }, () => ({ type: 'text', text: 'a' })), ...parts] }] };
    expect(estimateInputTokensUpperBound(body)).toBe(bytesOf(body) + 5 * IMAGE_TOKEN_ALLOWANCE + REQUEST_TOKEN_ALLOWANCE);
  });
});
