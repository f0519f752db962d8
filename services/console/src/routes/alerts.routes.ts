import { GatewayError } from '@gw/errors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { reauthenticate, reauthNeeded } from '../auth/reauth.ts';
import type { RouteDeps } from '../deps.ts';
import { flashCookie } from '../http/flash.ts';
import { formField } from '../http/forms.ts';
import { alertsPage, WEBHOOK_URL_MAX, type AlertForm } from '../views/alerts.view.ts';
import type { Notice } from '../views/layout.ts';
import { noticeFrom, viewerFor } from './viewer.ts';

const HTML = 'text/html; charset=utf-8';
const CREDITS = /^(0|[1-9][0-9]{0,14})$/;
const PERCENTS = /^\s*[1-9][0-9]{0,3}\s*(,\s*[1-9][0-9]{0,3}\s*)*$/;

type CreatedAlert = { alertId: string; secret: string };

function isCreatedAlert(value: unknown): value is CreatedAlert {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.alertId === 'string' && typeof v.secret === 'string';
}

/**
 * The account's alerts (owners: `alerts.manage`): the list with its state, a new alert (its
 * signing secret shown once, by the page of the redirect, from a one-time flash as a new key's
 * plaintext is), clearing one, a test delivery, and the delivery log. Creating an alert sets its
 * webhook, so it asks a session that signed in long ago to re-authenticate first.
 */
export async function alertsRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const flash = flashCookie(deps.hmac, deps.cookies, 'gw_flash_alert');

  const listPage = async (request: FastifyRequest, reply: FastifyReply, extra: { created?: CreatedAlert; form?: AlertForm; notice?: Notice }, status = 200) => {
    const ctx = await viewerFor(request, deps);
    const accountId = ctx.member.accountId;
    const [reauth, { alerts }, { deliveries }] = await Promise.all([
      reauthNeeded(request, deps),
      request.alerts.listAlerts({ accountId }),
      request.alerts.listDeliveries({ accountId, limit: 100 }),
    ]);
    return reply.code(status).type(HTML).send(alertsPage({ viewer: ctx.viewer, alerts, deliveries, reauth, ...extra }).value);
  };

  app.get('/alerts', { config: { permission: 'alerts.manage' } }, async (request, reply) => {
    const notice = noticeFrom(request.query);
    const created = flash.read(request, reply, request.memberSession!.idHash);
    return listPage(request, reply, { ...(notice ? { notice } : {}), ...(isCreatedAlert(created) ? { created } : {}) });
  });

  app.post('/alerts', { config: { permission: 'alerts.manage' } }, async (request, reply) => {
    const form: AlertForm = {
      lowBalance: formField(request.body, 'low_balance', 16).trim(),
      monthlyBudget: formField(request.body, 'monthly_budget', 16).trim(),
      thresholds: formField(request.body, 'budget_thresholds', 64).trim(),
      webhookUrl: formField(request.body, 'webhook_url', WEBHOOK_URL_MAX).trim(),
    };
    const refuse = (text: string) => listPage(request, reply, { form, notice: { kind: 'error', text } }, 400);
    // An alert's webhook receives the account's events: a session that proved who it is long ago proves it again.
    const refused = await reauthenticate(request, reply, deps);
    if (refused) return listPage(request, reply, { form, notice: refused.notice }, refused.status);
    for (const [value, what] of [
      [form.lowBalance, 'The low balance'],
      [form.monthlyBudget, 'The monthly budget'],
    ] as const) {
      if (value !== '' && !CREDITS.test(value)) return refuse(`${what} must be a whole number of credits from 0 to 999,999,999,999,999.`);
    }
    const lowBalance = BigInt(form.lowBalance || '0');
    const monthlyBudget = BigInt(form.monthlyBudget || '0');
    if (lowBalance === 0n && monthlyBudget === 0n) return refuse('Give a low balance, a monthly budget, or both.');
    if (form.thresholds !== '' && !PERCENTS.test(form.thresholds)) return refuse('The thresholds are percentages separated by commas, e.g. 50,80,100.');
    const budgetThresholds = form.thresholds === '' ? [] : form.thresholds.split(',').map((t) => Number(t.trim()));
    if (form.webhookUrl === '') return refuse('Give the webhook URL the alerts are sent to.');
    let created;
    try {
      created = await request.alerts.setAlert({ accountId: request.memberSession!.member.accountId, lowBalance, monthlyBudget, budgetThresholds, webhookUrl: form.webhookUrl });
    } catch (err) {
      // Billing says what is wrong with the settings (a private address, too many alerts, …).
      if (err instanceof GatewayError && err.code === 'invalid_request') return refuse(err.message);
      throw err;
    }
    request.log.info({ member: request.memberSession!.member.memberId, alert: created.alertId }, 'alert created');
    // Post, redirect, get: the secret is shown once by the page of the redirect (never in the URL).
    flash.write(reply, request.memberSession!.idHash, { alertId: created.alertId, secret: created.secret } satisfies CreatedAlert);
    return reply.redirect('/alerts', 303);
  });

  app.post<{ Params: { id: string } }>('/alerts/:id/clear', { config: { permission: 'alerts.manage' } }, async (request, reply) => {
    if (formField(request.body, 'confirm', 8) !== 'yes') return listPage(request, reply, { notice: { kind: 'error', text: 'Tick the box to confirm clearing the alert.' } }, 400);
    await request.alerts.clearAlert({ alertId: request.params.id });
    request.log.info({ member: request.memberSession!.member.memberId, alert: request.params.id }, 'alert cleared');
    return reply.redirect('/alerts?done=alert-cleared', 303);
  });

  app.post<{ Params: { id: string } }>('/alerts/:id/test', { config: { permission: 'alerts.manage' } }, async (request, reply) => {
    await request.alerts.testAlert({ alertId: request.params.id });
    return reply.redirect('/alerts?done=alert-tested', 303);
  });
}
