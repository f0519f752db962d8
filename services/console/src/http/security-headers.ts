import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Headers on every response, framework errors included (a malformed URL or an over-long id is
 * answered before any route or hook runs: `frameworkErrors` in app.ts sets these itself). The CSP
 * allows only the console's own scripts and styles (no inline script at all), forbids framing
 * and form posts to other origins. `Referrer-Policy: same-origin` keeps set-password tokens in
 * URLs from leaking to other sites while same-origin form posts keep their Origin header (which
 * `no-referrer` would turn into `null` and break the CSRF check). Pages hold account data, so
 * nothing but the static assets may be cached. Permissions-Policy turns off every powerful
 * browser feature (the copy button's clipboard write and passkeys stay ours). HSTS is sent when the console
 * is served over https (its public URL, or the request as a trusted proxy forwarded it).
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const PERMISSIONS_POLICY = [
  'accelerometer=()',
  'autoplay=()',
  'browsing-topics=()',
  'camera=()',
  'clipboard-read=()',
  'clipboard-write=(self)',
  'display-capture=()',
  'encrypted-media=()',
  'fullscreen=()',
  'geolocation=()',
  'gyroscope=()',
  'hid=()',
  'magnetometer=()',
  'microphone=()',
  'midi=()',
  'payment=()',
  // Passkeys (a second sign-in factor) for our own pages only.
  'publickey-credentials-create=(self)',
  'publickey-credentials-get=(self)',
  'screen-wake-lock=()',
  'serial=()',
  'usb=()',
  'xr-spatial-tracking=()',
].join(', ');

/** One year; no includeSubDomains (other hosts of the domain are not ours to decide for). */
const HSTS = 'max-age=31536000';

export function applySecurityHeaders(request: FastifyRequest, reply: FastifyReply, publicOrigin: string | undefined): void {
  reply.header('content-security-policy', CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'same-origin');
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cross-origin-resource-policy', 'same-origin');
  reply.header('permissions-policy', PERMISSIONS_POLICY);
  if (publicOrigin?.startsWith('https:') || request.protocol === 'https') reply.header('strict-transport-security', HSTS);
  // By the route matched, not the URL as sent (it could be spelled to look like an asset).
  if (!request.routeOptions.url?.startsWith('/assets/')) reply.header('cache-control', 'no-store');
}

export function registerSecurityHeaders(app: FastifyInstance, publicOrigin: string | undefined): void {
  app.addHook('onSend', async (request, reply) => applySecurityHeaders(request, reply, publicOrigin));
}
