import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { csrfTokenValid, preSessionCsrfToken, sameOrigin } from '../auth/csrf.ts';
import { PasskeyError } from '../auth/passkeys.ts';
import { PASSWORD_MAX, verifyPassword } from '../auth/passwords.ts';
import { passkeyResponse } from '../auth/reauth.ts';
import { randomToken } from '../auth/secrets.ts';
import { deviceCookie, trustedDevice } from '../auth/device.ts';
import { lockedMessage } from '../auth/throttle.ts';
import { formField, queryParam } from '../http/forms.ts';
import { flashCookie } from '../http/flash.ts';
import { EMAIL_MAX, MemberError, type MemberRow } from '../members/members.ts';
import { homeOf } from '../members/roles.ts';
import { invalidLinkPage, loginPage, setPasswordPage, totpPage } from '../views/auth.view.ts';
import type { Notice } from '../views/layout.ts';
import { safeNext } from './member-guard.ts';
import { noticeFrom } from './viewer.ts';

const HTML = 'text/html; charset=utf-8';
const PRE_SESSION = /^[A-Za-z0-9_-]{43}$/;
const BAD_LOGIN: Notice = { kind: 'error', text: 'The e-mail or password is not correct.' };
/** How long a browser stays known for the address it signed in to. */
const DEVICE_COOKIE_DAYS = 180;
const EXPIRED_FORM: Notice = { kind: 'error', text: 'The form had expired. Please try again.' };

/**
 * The pages open to everyone: sign in and set a password from a one-time link. Their forms are
 * CSRF-protected too (a forged sign-in would put a victim into an attacker's account): the token
 * is bound to a random pre-session cookie, and the Origin must be ours.
 */
interface SecondStep {
  memberId: string;
  next: string;
}

function isSecondStep(value: unknown): value is SecondStep {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.memberId === 'string' && typeof v.next === 'string';
}

export async function loginRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const secondStep = flashCookie(deps.hmac, deps.cookies, 'gw_second_step');
  /** The pre-session cookie's value, set when missing. */
  function preSession(request: FastifyRequest, reply: FastifyReply): string {
    const existing = request.cookies[deps.cookies.preSession];
    if (existing && PRE_SESSION.test(existing)) return existing;
    const value = randomToken();
    reply.setCookie(deps.cookies.preSession, value, deps.cookies.options);
    return value;
  }

  function formGenuine(request: FastifyRequest): boolean {
    const cookie = request.cookies[deps.cookies.preSession];
    if (!cookie || !PRE_SESSION.test(cookie)) return false;
    const submitted = formField(request.body, 'csrf_token', 128);
    return (
      csrfTokenValid(preSessionCsrfToken(deps.hmac, cookie), submitted) &&
      sameOrigin(request.headers.origin, request.headers.referer, deps.originOf(request))
    );
  }

  const showLogin = (request: FastifyRequest, reply: FastifyReply, status: number, opts: { email?: string; next?: string; notice?: Notice | undefined }) =>
    reply
      .code(status)
      .type(HTML)
      .send(loginPage({ csrf: preSessionCsrfToken(deps.hmac, preSession(request, reply)), ...opts }).value);

  app.get('/login', async (request, reply) => {
    const cookie = request.cookies[deps.cookies.session];
    if (cookie && (await deps.sessions.resolve(cookie))) return reply.redirect('/', 303);
    return showLogin(request, reply, 200, { next: safeNext(queryParam(request.query, 'next', 300)), notice: noticeFrom(request.query) });
  });

  app.post('/login', async (request, reply) => {
    const email = formField(request.body, 'email', EMAIL_MAX + 1);
    const password = formField(request.body, 'password', PASSWORD_MAX + 1);
    const next = safeNext(formField(request.body, 'next', 300));
    if (!formGenuine(request)) {
      request.log.warn('sign-in refused: CSRF check failed');
      return showLogin(request, reply, 403, { email, next, notice: EXPIRED_FORM });
    }
    // Counted before the password is checked: a burst of attempts gets no more checks than the
    // throttle allows. A browser that signed in to this address before is judged by its own
    // failures only (its device cookie), so nobody else's failures keep it out.
    const from = { ip: request.ip, device: trustedDevice(deps.hmac, request.cookies[deps.cookies.device], email) };
    const verdict = await deps.throttle.admit(email, from);
    if (verdict.locked) {
      reply.header('retry-after', String(verdict.retryAfterSeconds));
      return showLogin(request, reply, 429, { email, next, notice: { kind: 'error', text: lockedMessage(verdict, 'failed sign-ins') } });
    }
    const member = await deps.members.byEmail(email);
    // Verified even for an unknown address (against a dummy hash): the time taken tells nothing.
    const ok = await verifyPassword(member?.password_hash ?? null, password);
    if (!ok || !member) {
      request.log.info({ member: member?.id }, 'sign-in failed');
      return showLogin(request, reply, 401, { email, next, notice: BAD_LOGIN });
    }
    const factors = await deps.members.secondFactors(member.id);
    if (factors.totp || (factors.passkey && deps.passkeys)) {
      // The password was right; the session starts after the second step. The member between
      // the steps is carried sealed, bound to this browser's pre-session cookie, for 2 minutes.
      await deps.throttle.recordSuccess(email, from);
      const pre = preSession(request, reply);
      secondStep.write(reply, Buffer.from(pre), { memberId: member.id, next } satisfies SecondStep);
      return reply.type(HTML).send((await secondStepPage(member.id, pre)).value);
    }
    await deps.throttle.recordSuccess(email, from);
    return startSession(request, reply, member, next);
  });

  /** The second step's page: the code form with TOTP on, a passkey challenge with passkeys. */
  async function secondStepPage(memberId: string, pre: string, notice?: Notice) {
    const factors = await deps.members.secondFactors(memberId);
    const passkey = factors.passkey && deps.passkeys ? await deps.passkeys.authenticationOptions(memberId) : undefined;
    return totpPage({ csrf: preSessionCsrfToken(deps.hmac, pre), totp: factors.totp, passkey, notice });
  }

  /**
   * The second step's answer (a code or a passkey), checked by `check` once the step, the form
   * and the throttle allow; the session starts when it passes.
   */
  async function secondStepAnswer(request: FastifyRequest, reply: FastifyReply, check: (member: MemberRow) => Promise<Notice | null>) {
    const pre = request.cookies[deps.cookies.preSession] ?? '';
    const step = PRE_SESSION.test(pre) ? secondStep.read(request, reply, Buffer.from(pre)) : undefined;
    if (!isSecondStep(step)) return showLogin(request, reply, 400, { notice: { kind: 'error', text: 'The sign-in took too long. Sign in again.' } });
    const again = async (status: number, notice: Notice) => {
      secondStep.write(reply, Buffer.from(pre), step);
      return reply.code(status).type(HTML).send((await secondStepPage(step.memberId, pre, notice)).value);
    };
    if (!formGenuine(request)) return again(403, EXPIRED_FORM);
    const member = await deps.members.byId(step.memberId);
    if (!member) return showLogin(request, reply, 400, { notice: BAD_LOGIN });
    const from = { ip: request.ip, device: trustedDevice(deps.hmac, request.cookies[deps.cookies.device], member.email) };
    const verdict = await deps.throttle.admit(member.email, from);
    if (verdict.locked) {
      reply.header('retry-after', String(verdict.retryAfterSeconds));
      return again(429, { kind: 'error', text: lockedMessage(verdict, 'wrong codes') });
    }
    const refused = await check(member);
    if (refused) return again(401, refused);
    await deps.throttle.recordSuccess(member.email, from);
    return startSession(request, reply, member, step.next);
  }

  app.post('/login/code', async (request, reply) =>
    secondStepAnswer(request, reply, async (member) => {
      if (await deps.members.verifyTotp(member.id, formField(request.body, 'code', 16))) return null;
      request.log.info({ member: member.id }, 'sign-in code refused');
      return { kind: 'error', text: 'The code is not correct, or was used already. Enter the current code from your app.' };
    }),
  );

  app.post('/login/passkey', async (request, reply) =>
    secondStepAnswer(request, reply, async (member) => {
      const response = passkeyResponse(request.body, 'passkey_response');
      if (!deps.passkeys || !response) return { kind: 'error', text: 'No passkey answer came with the form. Use the passkey button.' };
      try {
        await deps.passkeys.authenticate(member.id, formField(request.body, 'passkey_handle', 64), response as never);
        return null;
      } catch (err) {
        if (!(err instanceof PasskeyError)) throw err;
        request.log.info({ member: member.id, reason: err.reason, detail: err.detail }, 'sign-in passkey refused');
        return { kind: 'error', text: err.message };
      }
    }),
  );

  /** Signs the member in: a new session id (no fixation), the device remembered. */
  async function startSession(request: FastifyRequest, reply: FastifyReply, member: MemberRow, next: string) {
    reply.setCookie(deps.cookies.device, deviceCookie(deps.hmac, member.email, request.cookies[deps.cookies.device]), {
      ...deps.cookies.options,
      maxAge: DEVICE_COOKIE_DAYS * 86_400,
    });
    // Always a new session id at sign-in: a planted cookie never becomes a signed-in session.
    const { cookieValue } = await deps.sessions.create(member.id, { userAgent: request.headers['user-agent'], ip: request.ip });
    reply.setCookie(deps.cookies.session, cookieValue, deps.cookies.options);
    reply.clearCookie(deps.cookies.preSession, deps.cookies.options);
    request.log.info({ member: member.id }, 'signed in');
    return reply.redirect(next || homeOf(member.role), 303);
  }

  app.get('/set-password', async (request, reply) => {
    const token = queryParam(request.query, 'token', 128);
    const member = await deps.members.tokenMember(token);
    if (!member) return reply.code(400).type(HTML).send(invalidLinkPage().value);
    const csrf = preSessionCsrfToken(deps.hmac, preSession(request, reply));
    return reply.type(HTML).send(setPasswordPage({ csrf, token, email: member.email }).value);
  });

  app.post('/set-password', async (request, reply) => {
    const token = formField(request.body, 'token', 128);
    const password = formField(request.body, 'password', PASSWORD_MAX + 1);
    const member = await deps.members.tokenMember(token);
    if (!member) return reply.code(400).type(HTML).send(invalidLinkPage().value);
    const again = (status: number, notice: Notice) =>
      reply
        .code(status)
        .type(HTML)
        .send(setPasswordPage({ csrf: preSessionCsrfToken(deps.hmac, preSession(request, reply)), token, email: member.email, notice }).value);
    if (!formGenuine(request)) return again(403, EXPIRED_FORM);
    if (password !== formField(request.body, 'confirm', PASSWORD_MAX + 1)) return again(400, { kind: 'error', text: 'The two passwords differ.' });
    try {
      await deps.members.setPasswordWithToken(token, password);
    } catch (err) {
      if (!(err instanceof MemberError)) throw err;
      if (err.reason === 'token') return reply.code(400).type(HTML).send(invalidLinkPage().value);
      return again(400, { kind: 'error', text: err.message });
    }
    request.log.info({ member: member.id }, 'password set from link');
    return reply.redirect('/login?done=password-set', 303);
  });
}
