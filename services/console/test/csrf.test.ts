import { describe, expect, it } from 'vitest';
import { csrfTokenValid, preSessionCsrfToken, sameOrigin, sessionCsrfToken } from '../src/auth/csrf.ts';
import { Hmac } from '../src/auth/secrets.ts';
import { testHmac } from './support.ts';

describe('CSRF tokens', () => {
  const hmac = testHmac();
  const sessionA = Buffer.alloc(32, 1);
  const sessionB = Buffer.alloc(32, 2);

  it('are bound to the session: one session\'s token never passes for another', () => {
    const a = sessionCsrfToken(hmac, sessionA);
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sessionCsrfToken(hmac, sessionA)).toBe(a);
    expect(csrfTokenValid(a, a)).toBe(true);
    expect(csrfTokenValid(sessionCsrfToken(hmac, sessionB), a)).toBe(false);
  });

  it('depend on the server secret, and pre-session tokens never pass as session tokens', () => {
    const other = new Hmac('another-secret-of-at-least-thirty-two-chars');
    expect(sessionCsrfToken(other, sessionA)).not.toBe(sessionCsrfToken(hmac, sessionA));
    expect(preSessionCsrfToken(hmac, sessionA.toString('base64url'))).not.toBe(sessionCsrfToken(hmac, sessionA));
  });

  it('refuse missing, empty, repeated, oversize and tampered submissions', () => {
    const good = sessionCsrfToken(hmac, sessionA);
    for (const bad of [undefined, '', [good, good], good.slice(1), `${good}x`, 'x'.repeat(500), 42]) {
      expect(csrfTokenValid(good, bad)).toBe(false);
    }
  });
});

describe('Origin check', () => {
  const ours = 'https://console.example.com';
  it.each([
    [ours, undefined, true],
    ['https://evil.example', undefined, false],
    ['http://console.example.com', undefined, false],
    [undefined, `${ours}/keys`, true],
    [undefined, 'https://evil.example/console.example.com', false],
    ['null', undefined, false],
    [undefined, undefined, false],
    [undefined, 'not a url', false],
  ])('origin %s, referer %s → %s', (origin, referer, ok) => {
    expect(sameOrigin(origin, referer, ours)).toBe(ok);
  });
});
