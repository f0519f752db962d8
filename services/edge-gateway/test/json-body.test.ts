import { describe, expect, it } from 'vitest';
import { JSON_BOUNDS, jsonShape } from '../src/http/json-body.ts';

const loose = { depth: 1e9, containers: 1e9, values: 1e9, items: 1e9 };

describe('jsonShape: what it counts', () => {
  it.each([
    ['nested objects and arrays', '{"a":[1,{"b":[]}],"c":{}}', { containers: 5, values: 6, depth: 4, widest: 2 }],
    ['braces inside strings do not count', '{"s":"{[{[","t":"say \\"{\\" twice"}', { containers: 1, values: 3, depth: 1, widest: 2 }],
    ['a string ending in an escaped backslash ends there', '{"s":"a\\\\","t":{}}', { containers: 2, values: 3, depth: 2, widest: 2 }],
    ['keys are not values, whatever space is before the colon', '{"a" : 1, "b"\n:\t"x"}', { containers: 1, values: 3, depth: 1, widest: 2 }],
    ['scalars of every kind', '[1,-2.5e3,true,false,null,"s"]', { containers: 1, values: 7, depth: 1, widest: 6 }],
    ['no containers', '"just a string"', { containers: 0, values: 1, depth: 0, widest: 0 }],
  ])('%s', (_name, text, expected) => {
    expect(JSON.parse(text)).toBeDefined(); // each case is valid JSON
    expect(jsonShape(text, loose)).toEqual(expected);
  });

  it('skips a long string in one scan, whatever it holds', () => {
    const base64 = 'QUJD'.repeat(2_000_000);
    expect(jsonShape(JSON.stringify({ image: base64, text: '{[{['.repeat(1_000) })).containers).toBe(1);
  });

  it('measures depth without recursion', () => {
    expect(jsonShape(`{"m":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, loose).depth).toBe(20_001);
  });
});

describe('jsonShape: each bound, for bodies of any size', () => {
  it.each([
    ['depth', `{"m":${'['.repeat(JSON_BOUNDS.depth)}${']'.repeat(JSON_BOUNDS.depth)}}`],
    ['containers', `[${Array.from({ length: 3 }, () => `[${'{},'.repeat(40_000)}{}]`).join(',')}]`],
    ['items', `{"metadata":[${'0,'.repeat(JSON_BOUNDS.items)}0]}`],
    ['items', `{${Array.from({ length: JSON_BOUNDS.items + 1 }, (_, i) => `"k${i}":1`).join(',')}}`],
    ['values', `[${Array.from({ length: 11 }, () => `[${'1,'.repeat(49_999)}1]`).join(',')}]`],
  ])('%s', (bound, text) => {
    expect(JSON.parse(text)).toBeDefined();
    expect(jsonShape(text).exceeded).toBe(bound);
  });

  it('a body just within every bound passes', () => {
    const text = `{"d":${'['.repeat(JSON_BOUNDS.depth - 1)}${']'.repeat(JSON_BOUNDS.depth - 1)},"n":[${'0,'.repeat(JSON_BOUNDS.items - 1)}0]}`;
    expect(jsonShape(text).exceeded).toBeUndefined();
  });

  it('stops at the first bound passed', () => {
    const text = `[${'{},'.repeat(1_000_000)}{}]`;
    const shape = jsonShape(text, { ...loose, containers: 10 });
    expect(shape).toMatchObject({ exceeded: 'containers', containers: 11 });
  });
});
