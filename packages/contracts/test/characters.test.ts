import { describe, expect, it } from 'vitest';
import { withinCharacters } from '../src/characters.ts';

describe('withinCharacters: counts code points as [...text] does, without copying', () => {
  it.each([
    ['empty', '', 3, true],
    ['exactly the limit', 'abc', 3, true],
    ['one over', 'abcd', 3, false],
    ['surrogate pairs count once', '🐱🐱🐱', 3, true],
    ['surrogate pairs, one over', '🐱🐱🐱🐱', 3, false],
    ['a lone high surrogate counts once', '\ud83d', 1, true],
    ['lone surrogates count once each', '\ude00\ud83d', 1, false],
    ['a high surrogate at the end', `${'🐱'.repeat(2)}\ud83d`, 3, true],
    ['mixed', 'a🐱b🐱', 4, true],
  ])('%s', (_what, text, max, expected) => {
    expect(withinCharacters(text, max)).toBe(expected);
    expect([...text].length <= max).toBe(expected);
  });

  it('refuses a text longer than two units a character from its length alone', () => {
    expect(withinCharacters('x'.repeat(22_000_000), 4_000)).toBe(false);
    expect(withinCharacters('🐱'.repeat(4_000), 4_000)).toBe(true);
  });
});
