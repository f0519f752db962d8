import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { formField } from '../http/forms.ts';
import type { Notice } from '../views/layout.ts';
import { PASSWORD_MAX, verifyPassword } from './passwords.ts';
import { lockedMessage } from './throttle.ts';

/**
 * Re-authentication before a sensitive action (creating a key; an alert's webhook when the
 * dashboard edits alerts): when the session last proved who it is longer ago than
 * `REAUTH_AFTER_MS`, the form must carry the password (`reauth_password`) and, with two-step
 * sign-in on, a code (`reauth_code`). Throttled like a sign-in, the session being the browser.
 */
export const REAUTH_AFTER_MS = 15 * 60_000;

/** What the form must ask for now, or undefined when the session proved itself recently. */
export async function reauthNeeded(request: FastifyRequest, deps: RouteDeps): Promise<{ totp: boolean } | undefined> {
  const session = request.memberSession!;
  if (deps.now().getTime() - session.authenticatedAt.getTime() <= REAUTH_AFTER_MS) return undefined;
  return { totp: await deps.members.totpEnabled(session.member.memberId) };
}

/**
 * Checks the re-authentication a form carries, when one is needed. Answers null when the action
 * may go on (the session is marked as proved again), else what to tell the member and the status.
 */
export async function reauthenticate(request: FastifyRequest, reply: FastifyReply, deps: RouteDeps): Promise<{ notice: Notice; status: number } | null> {
  const needed = await reauthNeeded(request, deps);
  if (!needed) return null;
  const session = request.memberSession!;
  const password = formField(request.body, 'reauth_password', PASSWORD_MAX + 1);
  if (password === '') return { notice: { kind: 'error', text: 'Confirm it is you: enter your password to go on.' }, status: 400 };
  const from = { ip: request.ip, device: `session:${session.idHash.toString('base64url')}` };
  const verdict = await deps.throttle.admit(session.member.email, from);
  if (verdict.locked) {
    reply.header('retry-after', String(verdict.retryAfterSeconds));
    return { notice: { kind: 'error', text: lockedMessage(verdict, 'wrong passwords or codes') }, status: 429 };
  }
  const row = await deps.members.byId(session.member.memberId);
  const ok =
    (await verifyPassword(row?.password_hash ?? null, password)) &&
    (!needed.totp || (await deps.members.verifyTotp(session.member.memberId, formField(request.body, 'reauth_code', 16))));
  if (!ok) return { notice: { kind: 'error', text: needed.totp ? 'The password or the code is not correct.' : 'The password is not correct.' }, status: 400 };
  await deps.throttle.recordSuccess(session.member.email, from);
  await deps.sessions.reauthenticated(session.idHash);
  session.authenticatedAt = deps.now();
  return null;
}
