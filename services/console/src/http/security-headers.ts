import type { FastifyInstance } from 'fastify';

/**
 * Headers on every response. The CSP allows only the console's own scripts and styles (no inline
 * script at all), forbids framing and form posts to other origins. `Referrer-Policy: same-origin`
 * keeps set-password tokens in URLs from leaking to other sites while same-origin form posts keep
 * their Origin header (which `no-referrer` would turn into `null` and break the CSRF check).
 * Pages hold account data, so nothing but the static assets may be cached.
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

export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => {
    reply.header('content-security-policy', CSP);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'same-origin');
    reply.header('cross-origin-opener-policy', 'same-origin');
    reply.header('cross-origin-resource-policy', 'same-origin');
    // By the route matched, not the URL as sent (it could be spelled to look like an asset).
    if (!request.routeOptions.url?.startsWith('/assets/')) reply.header('cache-control', 'no-store');
  });
}
