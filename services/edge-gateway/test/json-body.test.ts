import { describe, expect, it } from 'vitest';
import { jsonContainers, jsonShape } from '../src/http/json-body.ts';

describe('jsonContainers', () => {
  it.each([
    ['nested objects and arrays', '{"a":[1,{"b":[]}],"c":{}}', 5],
    ['braces inside strings do not count', '{"s":"{[{[","t":"say \\"{\\" twice"}', 1],
    ['a string ending in an escaped backslash ends there', '{"s":"a\\\\","t":{}}', 2],
    ['no containers', '"just a string"', 0],
  ])('%s', (_name, text, expected) => {
    expect(JSON.parse(text)).toBeDefined(); // each case is valid JSON
    expect(jsonContainers(text, 1_000)).toBe(expected);
  });

  it('stops counting past the limit', () => {
    const text = `[${'{},'.repeat(1_000_000)}{}]`;
    expect(jsonContainers(text, 10)).toBe(11);
  });

  it('skips a long string in one scan, whatever it holds', () => {
    const base64 = 'QUJD'.repeat(2_000_000);
    expect(jsonContainers(JSON.stringify({ image: base64, text: '{[{['.repeat(1_000) }), 10)).toBe(1);
  });
});

describe('jsonShape', () => {
  it('measures how deep objects and arrays nest, not counting brackets in strings', () => {
    expect(jsonShape('{"a":[1,{"b":[]}],"c":{}}', 1_000).depth).toBe(4);
    expect(jsonShape('{"s":"[[[[[[","t":[]}', 1_000).depth).toBe(2);
    expect(jsonShape(`{"m":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, 1_000_000).depth).toBe(20_001);
  });
});
