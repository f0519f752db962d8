import type { FastifyRequest } from 'fastify';
import type { alertsV1 } from '@gw/contracts';
import { formatInteger } from '../views/format.ts';
import type { RouteDeps } from '../deps.ts';
import { sessionCsrfToken } from '../auth/csrf.ts';
import type { SessionMember } from '../auth/sessions.ts';
import { can, PERMISSIONS } from '../members/roles.ts';
import type { Notice, Viewer } from '../views/layout.ts';

export interface ViewerContext {
  viewer: Viewer;
  member: SessionMember;
  /** The account's own zone (usage days and key windows); `viewer.timeZone` may differ. */
  accountTimeZone: string;
}

/** Who is looking, from the session, with the account's name and zone from billing. */
export async function viewerFor(request: FastifyRequest, deps: RouteDeps): Promise<ViewerContext> {
  const session = request.memberSession!;
  const { member } = session;
  // The balance is in every page's header; a page still shows when billing cannot tell it.
  const [account, unseenNotices, balance] = await Promise.all([
    request.billing.getAccount({ accountId: member.accountId }),
    deps.members.unseenNotices(member.memberId),
    request.billing.getWallet({ accountId: member.accountId }).then(
      (w) => w.balance,
      (err: unknown) => {
        request.log.warn({ err }, 'wallet balance unavailable for the page header');
        return undefined;
      },
    ),
  ]);
  // The banner of crossed alerts: one more call beside the balance's, made in parallel with it.
  const alertsCrossed = await request.alerts.listAlerts({ accountId: member.accountId }).then(
    ({ alerts }) => crossedAlerts(alerts),
    (err: unknown) => {
      request.log.warn({ err }, 'alerts unavailable for the page banner');
      return [];
    },
  );
  return {
    member,
    accountTimeZone: account.timeZone,
    viewer: {
      email: member.email,
      accountName: account.name,
      accountId: account.accountId,
      timeZone: member.timeZone ?? account.timeZone,
      csrf: sessionCsrfToken(deps.hmac, session.idHash),
      balance,
      alertsCrossed,
      unseenNotices,
      role: member.role,
      permissions: new Set(PERMISSIONS.filter((p) => can(member.role, p))),
    },
  };
}

/**
 * What the banner says of the account's alerts that crossed and have not re-armed: a low-balance
 * threshold reached (until a top-up lifts the balance back) and the budget percentages reached
 * this month (until the month ends).
 */
export function crossedAlerts(alerts: readonly alertsV1.Alert[]): string[] {
  const out: string[] = [];
  for (const a of alerts) {
    if (a.lowBalance > 0n && !a.lowBalanceArmed) out.push(`The balance fell below ${formatInteger(a.lowBalance)} credits.`);
    if (a.monthlyBudget > 0n && a.budgetFired.length > 0) {
      out.push(`This month's spending reached ${Math.max(...a.budgetFired)}% of the ${formatInteger(a.monthlyBudget)}-credit budget.`);
    }
  }
  return [...new Set(out)];
}

/** Confirmations shown after a redirect, by fixed code: nothing from the URL is ever echoed. */
const NOTICES: Record<string, Notice> = {
  'passkey-added': { kind: 'success', text: 'The passkey is added: signing in now also asks for it (or your code, with two-step sign-in on).' },
  'passkey-removed': { kind: 'success', text: 'The passkey is removed.' },
  'reauthenticated': { kind: 'success', text: 'Confirmed: you can change your passkeys now.' },
  'key-revoked': { kind: 'success', text: 'The key is revoked. Requests with it are refused from now on.' },
  'limit-saved': { kind: 'success', text: 'The limit is saved.' },
  'limit-removed': { kind: 'success', text: 'The limit is removed.' },
  'expiry-saved': { kind: 'success', text: 'The expiry is saved.' },
  'expiry-removed': { kind: 'success', text: 'The key no longer expires.' },
  'password-changed': { kind: 'success', text: 'Your password is changed. Your other sessions have ended.' },
  'time-zone-saved': { kind: 'success', text: 'The display time zone is saved.' },
  'password-set': { kind: 'success', text: 'Your password is set. Sign in with it.' },
  'totp-required': { kind: 'error', text: 'This account requires two-step sign-in. Set it up below to use the console.' },
  'require-totp-on': { kind: 'success', text: 'Every member of this account now needs two-step sign-in.' },
  'require-totp-off': { kind: 'success', text: 'Two-step sign-in is no longer required of every member.' },
  'totp-on': { kind: 'success', text: 'Two-step sign-in is on: signing in now also asks for a code from your app.' },
  'totp-off': { kind: 'success', text: 'Two-step sign-in is off.' },
  'session-ended': { kind: 'success', text: 'The session is ended: that browser is signed out.' },
  'alert-cleared': { kind: 'success', text: 'The alert is cleared. Its delivery log stays; deliveries not yet sent are dropped.' },
  'alert-tested': { kind: 'success', text: 'A test delivery is on its way. Follow it in the delivery log below.' },
  'logged-out': { kind: 'success', text: 'You are signed out.' },
  'logged-out-everywhere': { kind: 'success', text: 'You are signed out on every device.' },
};

export function noticeFrom(query: unknown): Notice | undefined {
  const code = typeof query === 'object' && query !== null ? (query as Record<string, unknown>).done : undefined;
  return typeof code === 'string' && Object.hasOwn(NOTICES, code) ? NOTICES[code] : undefined;
}
