import { describe, expect, it } from 'vitest';
import { jsonShape } from '../src/http/json-body.ts';

describe('jsonShape: containers', () => {
  it.each([
    ['nested objects and arrays', '{"a":[1,{"b":[]}],"c":{}}', 5],
    ['braces inside strings do not count', '{"s":"{[{[","t":"say \\"{\\" twice"}', 1],
    ['a string ending in an escaped backslash ends there', '{"s":"a\\\\","t":{}}', 2],
    ['no containers', '"just a string"', 0],
  ])('%s', (_name, text, expected) => {
    expect(JSON.parse(text)).toBeDefined(); // each case is valid JSON
    expect(jsonShape(text, 1_000).containers).toBe(expected);
  });

  it('stops counting past the limit', () => {
    const text = `[${'{},'.repeat(1_000_000)}{}]`;
    expect(jsonShape(text, 10).containers).toBe(11);
  });

  it('skips a long string in one scan, whatever it holds', () => {
    const base64 = 'QUJD'.repeat(2_000_000);
    expect(jsonShape(JSON.stringify({ image: base64, text: '{[{['.repeat(1_000) }), 10).containers).toBe(1);
  });
});

describe('jsonShape', () => {
  it('measures how deep objects and arrays nest, not counting brackets in strings', () => {
    expect(jsonShape('{"a":[1,{"b":[]}],"c":{}}', 1_000).depth).toBe(4);
    expect(jsonShape('{"s":"[[[[[[","t":[]}', 1_000).depth).toBe(2);
    expect(jsonShape(`{"m":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, 1_000_000).depth).toBe(20_001);
  });
});
