import { isTimeZone } from '@gw/service-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { PASSWORD_MAX, passwordProblem, verifyPassword } from '../auth/passwords.ts';
import { PasskeyError } from '../auth/passkeys.ts';
import { passkeyResponse, reauthenticate, reauthNeeded } from '../auth/reauth.ts';
import { lockedMessage } from '../auth/throttle.ts';
import { formField } from '../http/forms.ts';
import { MemberError } from '../members/members.ts';
import { accountPage } from '../views/account.view.ts';
import type { PasskeyChallenge } from '../views/passkeys.view.ts';
import type { Notice } from '../views/layout.ts';
import { timeZoneChoices } from '../views/zoned-time.ts';
import { noticeFrom, viewerFor } from './viewer.ts';

export async function accountRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  /** A change to the member's own second factor, in the account's audit trail (as the member, from the client's address). */
  const audit = (request: FastifyRequest, action: string, details: Record<string, unknown> = {}) => {
    const { member } = request.memberSession!;
    return deps.members.recordAudit({ accountId: member.accountId, actor: `member:${member.memberId}`, origin: request.ip, action, details });
  };

  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    notice: Notice | undefined,
    status = 200,
    totpSetup?: { secret: string; uri: string },
    passkeySetup?: PasskeyChallenge,
  ) => {
    const ctx = await viewerFor(request, deps);
    const totpOn = await deps.members.totpEnabled(ctx.member.memberId);
    const passkeys = deps.passkeys
      ? { list: await deps.passkeys.list(ctx.member.memberId), reauth: await reauthNeeded(request, deps), setup: passkeySetup }
      : undefined;
    const [notices, sessions] = await Promise.all([deps.members.readNotices(ctx.member.memberId), deps.sessions.list(ctx.member.memberId)]);
    const current = deps.sessions.handle(request.memberSession!.idHash);
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(
        accountPage({
          viewer: ctx.viewer,
          accountTimeZone: ctx.accountTimeZone,
          memberTimeZone: ctx.member.timeZone,
          zones: timeZoneChoices(ctx.accountTimeZone),
          notices,
          totp: { enabled: totpOn, setup: totpSetup },
          passkeys,
          sessions: sessions.map((x) => ({ handle: x.handle, createdAt: x.createdAt, lastSeenAt: x.lastSeenAt, userAgent: x.userAgent, network: x.network, current: x.handle === current })),
          notice,
        }).value,
      );
  };

  app.get('/account', { config: { permission: 'self' } }, async (request, reply) => show(request, reply, noticeFrom(request.query)));

  app.post('/account/password', { config: { permission: 'self' } }, async (request, reply) => {
    const session = request.memberSession!;
    const current = formField(request.body, 'current', PASSWORD_MAX + 1);
    const next = formField(request.body, 'password', PASSWORD_MAX + 1);
    if (next !== formField(request.body, 'confirm', PASSWORD_MAX + 1)) {
      return show(request, reply, { kind: 'error', text: 'The two new passwords differ.' }, 400);
    }
    // A new password that cannot be taken is said before the current one is checked (and counted).
    const problem = passwordProblem(next, session.member.email);
    if (problem) return show(request, reply, { kind: 'error', text: problem }, 400);
    // The current password is a password check like a sign-in: throttled alike, so a session left
    // open (or stolen) does not give unlimited guesses at it.
    // The session is the device: its own failures hold it back, nobody else's.
    const from = { ip: request.ip, device: `session:${session.idHash.toString('base64url')}` };
    const verdict = await deps.throttle.admit(session.member.email, from);
    if (verdict.locked) {
      reply.header('retry-after', String(verdict.retryAfterSeconds));
      return show(request, reply, { kind: 'error', text: lockedMessage(verdict, 'wrong current passwords') }, 429);
    }
    try {
      await deps.members.changePassword(session.member.memberId, current, next, session.idHash);
    } catch (err) {
      if (err instanceof MemberError) return show(request, reply, { kind: 'error', text: err.message }, 400);
      throw err;
    }
    await deps.throttle.recordSuccess(session.member.email, from);
    request.log.info({ member: session.member.memberId }, 'password changed');
    return reply.redirect('/account?done=password-changed', 303);
  });

  app.post('/account/time-zone', { config: { permission: 'self' } }, async (request, reply) => {
    const zone = formField(request.body, 'time_zone', 64);
    if (zone !== '' && !isTimeZone(zone)) return show(request, reply, { kind: 'error', text: 'Choose a time zone from the list.' }, 400);
    await deps.members.setTimeZone(request.memberSession!.member.memberId, zone === '' ? null : zone);
    return reply.redirect('/account?done=time-zone-saved', 303);
  });

  app.post('/logout', { config: { permission: 'self' } }, async (request, reply) => {
    await deps.sessions.revoke(request.memberSession!.idHash);
    reply.clearCookie(deps.cookies.session, deps.cookies.options);
    return reply.redirect('/login?done=logged-out', 303);
  });

  // Two-step sign-in (TOTP): set up (a new secret shown once, confirmed by a code from it),
  // or turned off with the password and a current code.
  app.post('/account/totp/start', { config: { permission: 'self' } }, async (request, reply) => {
    const { member } = request.memberSession!;
    if (await deps.members.totpEnabled(member.memberId)) return show(request, reply, { kind: 'error', text: 'Two-step sign-in is already on.' }, 400);
    const setup = await deps.members.startTotp(member.memberId, member.email);
    return show(request, reply, undefined, 200, setup);
  });

  app.post('/account/totp/confirm', { config: { permission: 'self' } }, async (request, reply) => {
    const { member } = request.memberSession!;
    if (!(await deps.members.confirmTotp(member.memberId, formField(request.body, 'code', 16)))) {
      return show(request, reply, { kind: 'error', text: 'That code does not match. Set up again and enter the code your app shows.' }, 400);
    }
    await audit(request, 'console.EnableTotp');
    request.log.info({ member: member.memberId }, 'two-step sign-in turned on');
    return reply.redirect('/account?done=totp-on', 303);
  });

  app.post('/account/totp/disable', { config: { permission: 'self' } }, async (request, reply) => {
    const session = request.memberSession!;
    const from = { ip: request.ip, device: `session:${session.idHash.toString('base64url')}` };
    const verdict = await deps.throttle.admit(session.member.email, from);
    if (verdict.locked) {
      reply.header('retry-after', String(verdict.retryAfterSeconds));
      return show(request, reply, { kind: 'error', text: lockedMessage(verdict, 'wrong passwords or codes') }, 429);
    }
    const row = await deps.members.byId(session.member.memberId);
    const passwordOk = await verifyPassword(row?.password_hash ?? null, formField(request.body, 'current', PASSWORD_MAX + 1));
    if (!passwordOk || !(await deps.members.verifyTotp(session.member.memberId, formField(request.body, 'code', 16)))) {
      return show(request, reply, { kind: 'error', text: 'The password or the code is not correct.' }, 400);
    }
    await deps.throttle.recordSuccess(session.member.email, from);
    await deps.members.disableTotp(session.member.memberId);
    await audit(request, 'console.DisableTotp');
    request.log.info({ member: session.member.memberId }, 'two-step sign-in turned off');
    return reply.redirect('/account?done=totp-off', 303);
  });

  // Passkeys: adding or removing one needs a recent sign-in (re-authentication first).
  app.post('/account/reauth', { config: { permission: 'self' } }, async (request, reply) => {
    const refused = await reauthenticate(request, reply, deps);
    if (refused) return show(request, reply, refused.notice, refused.status);
    return reply.redirect('/account?done=reauthenticated', 303);
  });

  /** The member's passkeys, when on and the session proved itself recently; else the page saying why not. */
  const passkeysReady = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!deps.passkeys) {
      await show(request, reply, { kind: 'error', text: 'Passkeys are off: the console has no public URL (CONSOLE_PUBLIC_URL) configured.' }, 404);
      return undefined;
    }
    if (await reauthNeeded(request, deps)) {
      await show(request, reply, { kind: 'error', text: 'Confirm it is you first (below), then change your passkeys.' }, 403);
      return undefined;
    }
    return deps.passkeys;
  };

  app.post('/account/passkeys/start', { config: { permission: 'self' } }, async (request, reply) => {
    const passkeys = await passkeysReady(request, reply);
    if (!passkeys) return reply;
    const { member } = request.memberSession!;
    const setup = await passkeys.registrationOptions({ id: member.memberId, email: member.email });
    return show(request, reply, undefined, 200, undefined, setup);
  });

  app.post('/account/passkeys/add', { config: { permission: 'self' } }, async (request, reply) => {
    const passkeys = await passkeysReady(request, reply);
    if (!passkeys) return reply;
    const { member } = request.memberSession!;
    const response = passkeyResponse(request.body, 'passkey_response');
    if (!response) return show(request, reply, { kind: 'error', text: 'No passkey came with the form. Use "Add a passkey" and then the button to create it.' }, 400);
    let added;
    try {
      added = await passkeys.register(member.memberId, formField(request.body, 'passkey_handle', 64), response as never, formField(request.body, 'name', 200));
    } catch (err) {
      if (!(err instanceof PasskeyError)) throw err;
      return show(request, reply, { kind: 'error', text: err.message }, 400);
    }
    await audit(request, 'console.AddPasskey', { passkey_id: added.id, name: added.name });
    request.log.info({ member: member.memberId }, 'passkey added');
    return reply.redirect('/account?done=passkey-added', 303);
  });

  app.post('/account/passkeys/remove', { config: { permission: 'self' } }, async (request, reply) => {
    const passkeys = await passkeysReady(request, reply);
    if (!passkeys) return reply;
    const { member } = request.memberSession!;
    const passkeyId = formField(request.body, 'passkey', 64);
    if (!(await passkeys.remove(member.memberId, passkeyId))) {
      return show(request, reply, { kind: 'error', text: 'That passkey is not yours or was removed already.' }, 400);
    }
    await audit(request, 'console.RemovePasskey', { passkey_id: passkeyId.toLowerCase() });
    request.log.info({ member: member.memberId }, 'passkey removed');
    return reply.redirect('/account?done=passkey-removed', 303);
  });

  app.post('/account/sessions/end', { config: { permission: 'self' } }, async (request, reply) => {
    const session = request.memberSession!;
    const handle = formField(request.body, 'session', 32);
    if (handle === deps.sessions.handle(session.idHash)) return show(request, reply, { kind: 'error', text: 'That is this session: use Log out.' }, 400);
    if (!(await deps.sessions.revokeByHandle(session.member.memberId, handle))) {
      return show(request, reply, { kind: 'error', text: 'That session has already ended.' }, 400);
    }
    request.log.info({ member: session.member.memberId }, 'session ended by its member');
    return reply.redirect('/account?done=session-ended', 303);
  });

  app.post('/account/logout-all', { config: { permission: 'self' } }, async (request, reply) => {
    const { memberId } = request.memberSession!.member;
    const ended = await deps.sessions.revokeAll(memberId);
    await deps.members.endPendingLinks(memberId);
    request.log.info({ member: memberId, sessions: ended }, 'logged out everywhere');
    reply.clearCookie(deps.cookies.session, deps.cookies.options);
    return reply.redirect('/login?done=logged-out-everywhere', 303);
  });
}
