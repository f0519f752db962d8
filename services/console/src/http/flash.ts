import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Hmac } from '../auth/secrets.ts';
import type { CookieSettings } from './cookies.ts';

/**
 * A one-time message from a form's POST to the page its redirect shows (post, redirect, get): a
 * cookie sealed with AES-256-GCM under a key derived from the console's secret and bound to the
 * session (its id hash is the associated data), read once and cleared by the page that shows it.
 * Stateless, so any console replica can show it; the server keeps no copy. A refresh, or the
 * cookie replayed in another session, shows nothing.
 */
const LIFETIME_S = 120;

export interface Flash {
  read(request: FastifyRequest, reply: FastifyReply, sessionIdHash: Buffer): unknown;
  write(reply: FastifyReply, sessionIdHash: Buffer, value: unknown): void;
}

export function flashCookie(hmac: Hmac, cookies: CookieSettings, cookieName = 'gw_flash'): Flash {
  const key = hmac.digest('flash-cookie-key', '');
  const name = cookies.session.replace('gw_session', cookieName);
  const options = { ...cookies.options, sameSite: 'strict' as const, maxAge: LIFETIME_S };
  return {
    write(reply, sessionIdHash, value) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(sessionIdHash);
      const sealed = Buffer.concat([cipher.update(JSON.stringify({ value, exp: Date.now() + LIFETIME_S * 1000 }), 'utf8'), cipher.final()]);
      reply.setCookie(name, Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url'), options);
    },
    read(request, reply, sessionIdHash) {
      const raw = request.cookies[name];
      if (raw === undefined) return undefined;
      reply.clearCookie(name, cookies.options);
      try {
        const bytes = Buffer.from(raw, 'base64url');
        const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
        decipher.setAAD(sessionIdHash);
        decipher.setAuthTag(bytes.subarray(12, 28));
        const opened = JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')) as { value: unknown; exp: number };
        return opened.exp > Date.now() ? opened.value : undefined;
      } catch {
        // Tampered, from another session, or sealed under another secret: nothing to show.
        return undefined;
      }
    },
  };
}
