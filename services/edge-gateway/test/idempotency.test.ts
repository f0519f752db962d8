import { createHash } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyHash, idempotencyKeyOf } from '../src/generation/idempotency.ts';

describe('Idempotency-Key header', () => {
  it('is absent when not sent', () => {
    expect(idempotencyKeyOf({})).toBeUndefined();
  });

  it.each(['a', '0f8fa6b2-5d1e-4b57-9a3c-0e4a1b2c3d4e', 'order-42 retry', 'x'.repeat(255), '~!@#$%^&*()_+{}|:"<>?'])('accepts %j', (key) => {
    expect(idempotencyKeyOf({ 'idempotency-key': key })).toBe(key);
  });

  it.each([
    ['empty', ''],
    ['too long', 'x'.repeat(256)],
    ['non-ASCII', 'clé-1'],
    ['a control character', 'a\tb'],
    ['leading space', ' a'],
    ['sent twice', ['a', 'b']],
  ])('refuses %s with invalid_request', (_name, value) => {
    let err: unknown;
    try {
      idempotencyKeyOf({ 'idempotency-key': value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('invalid_request');
    expect((err as GatewayError).message).toMatch(/Idempotency-Key/);
  });
});

describe('body hash', () => {
  it('is the SHA-256 of the canonical JSON', () => {
    // printf '%s' '{"a":1,"b":[true,null,"x"]}' | sha256sum
    expect(bodyHash({ b: [true, null, 'x'], a: 1 }).toString('hex')).toBe('eca8cfb31ab74533e1eb2f4c74d2d55dfe3c79ac704787e54be8647ea7777eb1');
    expect(bodyHash({}).length).toBe(32);
  });

  it('ignores key order at every level, and nothing else', () => {
    const a = { model: 'm', prompt: 'p', n: 2, image: { mime_type: 'image/png', b64_json: 'AAAA' } };
    const b = JSON.parse('{ "image": {"b64_json":"AAAA", "mime_type":"image/png"}, "n":2, "prompt":"p", "model":"m" }') as unknown;
    expect(bodyHash(b).equals(bodyHash(a))).toBe(true);
    for (const changed of [
      { ...a, n: 3 },
      { ...a, prompt: 'p ' },
      { ...a, size: '1024x1024' },
      { ...a, image: { ...a.image, b64_json: 'AAAB' } },
      { ...a, n: '2' },
    ]) {
      expect(bodyHash(changed).equals(bodyHash(a))).toBe(false);
    }
  });

  it('keeps arrays in order', () => {
    expect(bodyHash([1, 2]).equals(bodyHash([2, 1]))).toBe(false);
  });
});

/** The canonical form hashed before RFC 8785 (canonicalize) was used: claims stored then hold its hash. */
function formerCanonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(formerCanonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const entries = Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${formerCanonicalJson(record[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

describe('body hash across the move to RFC 8785', () => {
  it('is the former hash for every parsed JSON body, so a claim stored before still compares', () => {
    const text = fc.string({ unit: 'grapheme' });
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        text,
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(text, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        const parsed = JSON.parse(JSON.stringify(value)) as unknown;
        const former = createHash('sha256').update(formerCanonicalJson(parsed)).digest();
        expect(bodyHash(parsed).equals(former)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('orders keys by UTF-16 code units and writes numbers as ECMAScript does (RFC 8785 3.2.2.3, 3.2.3)', () => {
    const parsed = JSON.parse(String.raw`{"\u20ac":1,"\r":2,"\ud83d\ude00":3,"1":1e21,"a":-0,"b":0.000001,"c":1E-7}`) as unknown;
    const canonical = String.raw`{"\r":2,"1":1e+21,"a":0,"b":0.000001,"c":1e-7,"€":1,"😀":3}`;
    expect(bodyHash(parsed).equals(createHash('sha256').update(canonical).digest())).toBe(true);
  });

  it('refuses a string with a lone surrogate with invalid_request, saying what to send', () => {
    let err: unknown;
    try {
      bodyHash(JSON.parse('{"prompt":"a \ud800 b"}'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('invalid_request');
    expect((err as GatewayError).message).toMatch(/unpaired surrogate/);
  });
});
