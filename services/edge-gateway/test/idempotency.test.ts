import { GatewayError } from '@gw/errors';
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
