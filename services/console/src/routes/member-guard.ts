import type { FastifyInstance } from 'fastify';
import { csrfTokenValid, sameOrigin, sessionCsrfToken } from '../auth/csrf.ts';
import type { RouteDeps } from '../deps.ts';
import { guardedAlerts, guardedBilling } from '../billing/guard.ts';
import { can } from '../members/roles.ts';
import { forbiddenPage, messagePage } from '../views/auth.view.ts';

const READ_ONLY = new Set(['GET', 'HEAD']);
/** Where a signed-out visitor may be sent back to after signing in: our own paths only. */
const NEXT = /^\/(?:keys|usage|activity|balance|account|members|alerts|audit)(?:[/?][A-Za-z0-9\-._~/?=&%]*)?$/;

export function safeNext(next: string): string {
  return next.length <= 300 && NEXT.test(next) ? next : '';
}

/**
 * Guards every route of the plugin it is installed in: a valid session or no entry (a page view
 * is sent to sign in; anything else gets 401), and, for every state-changing request, the
 * session's CSRF token and our own Origin. The account a route acts on is always the session's;
 * no route takes an account id from the request.
 */
export function requireMember(app: FastifyInstance, deps: RouteDeps): void {
  app.addHook('onRequest', async (request, reply) => {
    const cookie = request.cookies[deps.cookies.session];
    const session = cookie ? await deps.sessions.resolve(cookie) : null;
    if (!session) {
      if (cookie) reply.clearCookie(deps.cookies.session, deps.cookies.options);
      if (READ_ONLY.has(request.method)) {
        const next = safeNext(request.url);
        return reply.redirect(next ? `/login?next=${encodeURIComponent(next)}` : '/login', 303);
      }
      return reply.code(401).type('text/html; charset=utf-8').send(messagePage('Signed out', 'Your session has ended. Sign in again.').value);
    }
    request.memberSession = session;
    // Every page and form names what it needs (route config); one that names nothing is refused.
    const needs = request.routeOptions.config.permission;
    if (!needs || !can(session.member.role, needs)) {
      request.log.warn({ member: session.member.memberId, role: session.member.role, needs }, 'refused: the role does not allow it');
      return reply.code(403).type('text/html; charset=utf-8').send(forbiddenPage(session.member.role).value);
    }
    // The account's owners require two-step sign-in: until the member sets it up, only their own
    // account page (where they set it up) and signing out are open.
    if (session.member.totpMissing && needs !== 'self') {
      if (READ_ONLY.has(request.method)) return reply.redirect('/account?done=totp-required', 303);
      return reply.code(403).type('text/html; charset=utf-8').send(messagePage('Two-step sign-in required', 'This account requires two-step sign-in. Set it up on your account page first.').value);
    }
    // Every billing call of this request goes through the role check too.
    request.billing = guardedBilling(deps.billing, session.member, (keyId) => deps.members.keyCreator(keyId), request.ip);
    request.alerts = guardedAlerts(deps.alerts, session.member, request.ip);
  });

  app.addHook('preHandler', async (request, reply) => {
    if (READ_ONLY.has(request.method)) return;
    const session = request.memberSession!;
    const submitted = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>).csrf_token : undefined;
    const tokenOk = csrfTokenValid(sessionCsrfToken(deps.hmac, session.idHash), submitted);
    const originOk = sameOrigin(request.headers.origin, request.headers.referer, deps.originOf(request));
    if (!tokenOk || !originOk) {
      request.log.warn({ member: session.member.memberId, tokenOk, originOk }, 'state-changing request refused: CSRF check failed');
      return reply
        .code(403)
        .type('text/html; charset=utf-8')
        .send(messagePage('Form expired', 'This form has expired or did not come from this site. Reload the page and try again.').value);
    }
  });
}
