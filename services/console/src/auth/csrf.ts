import { safeEqual, type Hmac } from './secrets.ts';

/**
 * CSRF defence in two layers on every state-changing request:
 * 1. A synchronizer token: an HMAC of the session id (or, before sign-in, of a random pre-session
 *    cookie), put in every form. Another site can neither read it nor compute it.
 * 2. An Origin check: the browser's Origin (or, failing that, Referer) must be the console's own.
 *    A request with neither is refused; every current browser sends Origin on a POST.
 */

export function sessionCsrfToken(hmac: Hmac, sessionHash: Buffer): string {
  return hmac.digest('csrf-session', sessionHash).toString('base64url');
}

export function preSessionCsrfToken(hmac: Hmac, preSessionCookie: string): string {
  return hmac.digest('csrf-pre-session', preSessionCookie).toString('base64url');
}

/** True when the submitted token equals the expected one (constant time; a missing one never does). */
export function csrfTokenValid(expected: string, submitted: unknown): boolean {
  return typeof submitted === 'string' && submitted.length > 0 && submitted.length <= 128 && safeEqual(expected, submitted);
}

/** True when the request comes from a page of `expectedOrigin` (e.g. `https://console.example.com`). */
export function sameOrigin(origin: string | undefined, referer: string | undefined, expectedOrigin: string): boolean {
  if (origin !== undefined && origin !== 'null') return origin === expectedOrigin;
  if (referer === undefined) return false;
  try {
    return new URL(referer).origin === expectedOrigin;
  } catch {
    return false;
  }
}
