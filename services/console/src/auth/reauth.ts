import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { formField } from '../http/forms.ts';
import type { Notice } from '../views/layout.ts';
import type { ReauthAsk } from '../views/passkeys.view.ts';
import { PasskeyError } from './passkeys.ts';
import { PASSWORD_MAX, verifyPassword } from './passwords.ts';
import { lockedMessage } from './throttle.ts';

/**
 * Re-authentication before a sensitive action (creating a key; an alert's webhook when the
 * dashboard edits alerts; adding or removing a passkey): when the session last proved who it is
 * longer ago than `REAUTH_AFTER_MS`, the form must carry either the password (`reauth_password`)
 * and, with two-step sign-in on, a code (`reauth_code`), or an answer from one of the member's
 * passkeys (`reauth_passkey_handle`, `reauth_passkey_response`). A member whose only second
 * factor is a passkey must use it (a password alone would be less than their sign-in). Throttled
 * like a sign-in, the session being the browser.
 */
export const REAUTH_AFTER_MS = 15 * 60_000;
/** Largest passkey response a form may carry (a registration with "none" attestation is ~1 KB). */
export const PASSKEY_RESPONSE_MAX = 8_000;

/** What the form must ask for now, or undefined when the session proved itself recently. */
export async function reauthNeeded(request: FastifyRequest, deps: RouteDeps): Promise<ReauthAsk | undefined> {
  const session = request.memberSession!;
  if (deps.now().getTime() - session.authenticatedAt.getTime() <= REAUTH_AFTER_MS) return undefined;
  const factors = await deps.members.secondFactors(session.member.memberId);
  const passkey = factors.passkey && deps.passkeys ? await deps.passkeys.authenticationOptions(session.member.memberId) : undefined;
  return { totp: factors.totp, passkey };
}

/** A passkey response a form carries, parsed; undefined when there is none or it is not JSON. */
export function passkeyResponse(body: unknown, field: string): Record<string, unknown> | undefined {
  const raw = formField(body, field, PASSKEY_RESPONSE_MAX);
  if (raw === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks the re-authentication a form carries, when one is needed. Answers null when the action
 * may go on (the session is marked as proved again), else what to tell the member and the status.
 */
export async function reauthenticate(request: FastifyRequest, reply: FastifyReply, deps: RouteDeps): Promise<{ notice: Notice; status: number } | null> {
  const session = request.memberSession!;
  if (deps.now().getTime() - session.authenticatedAt.getTime() <= REAUTH_AFTER_MS) return null;
  const factors = await deps.members.secondFactors(session.member.memberId);
  const assertion = passkeyResponse(request.body, 'reauth_passkey_response');
  const password = formField(request.body, 'reauth_password', PASSWORD_MAX + 1);
  const passkeyOnly = factors.passkey && !factors.totp && deps.passkeys !== undefined;
  if (!assertion && (password === '' || passkeyOnly)) {
    return { notice: { kind: 'error', text: passkeyOnly ? 'Confirm it is you: use your passkey to go on.' : 'Confirm it is you: enter your password to go on.' }, status: 400 };
  }
  const from = { ip: request.ip, device: `session:${session.idHash.toString('base64url')}` };
  const verdict = await deps.throttle.admit(session.member.email, from);
  if (verdict.locked) {
    reply.header('retry-after', String(verdict.retryAfterSeconds));
    return { notice: { kind: 'error', text: lockedMessage(verdict, 'wrong passwords or codes') }, status: 429 };
  }
  if (assertion) {
    if (!deps.passkeys || !factors.passkey) return { notice: { kind: 'error', text: 'You have no passkey: enter your password to go on.' }, status: 400 };
    try {
      await deps.passkeys.authenticate(session.member.memberId, formField(request.body, 'reauth_passkey_handle', 64), assertion as never);
    } catch (err) {
      if (!(err instanceof PasskeyError)) throw err;
      return { notice: { kind: 'error', text: err.message }, status: 400 };
    }
  } else {
    const row = await deps.members.byId(session.member.memberId);
    const ok =
      (await verifyPassword(row?.password_hash ?? null, password)) &&
      (!factors.totp || (await deps.members.verifyTotp(session.member.memberId, formField(request.body, 'reauth_code', 16))));
    if (!ok) return { notice: { kind: 'error', text: factors.totp ? 'The password or the code is not correct.' : 'The password is not correct.' }, status: 400 };
  }
  await deps.throttle.recordSuccess(session.member.email, from);
  await deps.sessions.reauthenticated(session.idHash);
  session.authenticatedAt = deps.now();
  return null;
}
