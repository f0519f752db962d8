import { describe, expect, it } from 'vitest';
import { creditsFor } from '../src/domain/pricing.ts';

describe('creditsFor', () => {
  it.each([
    // tokens, price per million, credits
    [0n, 15_000n, 1n], // minimum 1 credit per successful text request
    [1n, 15_000n, 1n], // 0.015 rounds up
    [66n, 15_000n, 1n], // 0.99 rounds up
    [67n, 15_000n, 2n], // 1.005 rounds up to 2
    [1_000_000n, 15_000n, 15_000n], // exact
    [1_000_001n, 15_000n, 15_001n], // any fraction rounds up
    [123_456_789n, 75_000n, 9_259_260n],
    [10n, 0n, 1n], // a free model still costs the minimum
  ])('text: %d tokens at %d per million → %d credits', (tokens, price, want) => {
    expect(creditsFor('million_tokens', tokens, price)).toBe(want);
  });

  it('stays exact far beyond float precision', () => {
    expect(creditsFor('million_tokens', 9_007_199_254_740_993n, 3n)).toBe(27_021_597_765n);
  });

  it('images and seconds are quantity × price, zero allowed', () => {
    expect(creditsFor('image', 3n, 1_000n)).toBe(3_000n);
    expect(creditsFor('image', 0n, 1_000n)).toBe(0n);
    expect(creditsFor('second', 8n, 5_000n)).toBe(40_000n);
  });

  it('refuses negative inputs', () => {
    expect(() => creditsFor('image', -1n, 5n)).toThrow(RangeError);
    expect(() => creditsFor('million_tokens', 1n, -5n)).toThrow(RangeError);
  });
});
