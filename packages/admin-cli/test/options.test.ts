import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseRoute } from '../src/commands/models.ts';
import { INT32_MAX, nonNegativeInt, print, UsageError } from '../src/output.ts';

/** A parsed --route as [provider, upstream model, priority, weight]. */
function route(text: string): unknown[] {
  const r = parseRoute(text);
  return [r.provider, r.upstreamModel, r.priority, r.weight];
}

describe('operator CLI options and output', () => {
  afterEach(() => vi.restoreAllMocks());

  it('prints big integers exactly (an int64 balance or price), as JSON numbers', () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => out.push(String(chunk)) > 0);
    print({ price: 9_223_372_036_854_775_807n, small: 5n, name: 'm' }, true);
    expect(out.join('')).toBe('{"price":9223372036854775807,"small":5,"name":"m"}\n');
  });

  it('bounds numbers by the field they fill: past it is a usage error, not a failed call', () => {
    expect(nonNegativeInt('--price', '9223372036854775807')).toBe(9_223_372_036_854_775_807n);
    expect(() => nonNegativeInt('--price', '9223372036854775808')).toThrow(new UsageError('--price must be at most 9223372036854775807'));
    expect(() => nonNegativeInt('--max-output-tokens', '2147483648', INT32_MAX)).toThrow(UsageError);
  });

  it('reads a route whose upstream model id holds colons (fine-tuned ids); priority and weight are the trailing numbers', () => {
    expect(route('openai:gpt-sim-mini')).toEqual(['openai', 'gpt-sim-mini', 0, 1]);
    expect(route('openai:gpt-sim-mini:2:5')).toEqual(['openai', 'gpt-sim-mini', 2, 5]);
    expect(route('openai:ft:gpt-4o:org:abc')).toEqual(['openai', 'ft:gpt-4o:org:abc', 0, 1]);
    expect(route('openai:ft:gpt-4o:org:abc:1')).toEqual(['openai', 'ft:gpt-4o:org:abc', 1, 1]);
    expect(() => parseRoute('openai')).toThrow(UsageError);
    expect(() => parseRoute('openai:m:1:2147483648')).toThrow(UsageError);
  });
});
