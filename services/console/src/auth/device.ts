import { randomToken, safeEqual, type Hmac } from './secrets.ts';

/**
 * A browser that signed in to an address before carries a device cookie for it: a random id and
 * an HMAC binding it to the address. Sign-in attempts from that browser are throttled by its own
 * failures only, so nobody else's failures (from anywhere) can keep the owner's browser out.
 * Stateless: any replica verifies it; a new sign-in to another address replaces it.
 */
const ID = /^[A-Za-z0-9_-]{43}$/;

function mac(hmac: Hmac, id: string, email: string): string {
  return hmac.digest('device', `${id}\0${email.trim().normalize('NFKC').toLowerCase()}`).toString('base64url');
}

/** A fresh cookie value for a browser that just signed in to `email` (keeps its id when it had one). */
export function deviceCookie(hmac: Hmac, email: string, previous: string | undefined): string {
  const id = previous?.split('.')[0];
  const keep = id !== undefined && ID.test(id) ? id : randomToken();
  return `${keep}.${mac(hmac, keep, email)}`;
}

/** The device id when the cookie proves an earlier sign-in to `email`, else undefined. */
export function trustedDevice(hmac: Hmac, cookie: string | undefined, email: string): string | undefined {
  if (!cookie || cookie.length > 100) return undefined;
  const [id, given] = cookie.split('.');
  if (!id || !given || !ID.test(id)) return undefined;
  return safeEqual(mac(hmac, id, email), given) ? id : undefined;
}
