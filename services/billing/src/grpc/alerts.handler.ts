import { alertsV1, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import type { MikroORM } from '@mikro-orm/postgresql';
import { clearAlert, listAlerts, listDeliveries, setAlert, testAlert } from '../domain/alerts.ts';
import { listAudit } from '../domain/audit-trail.ts';
import type { EndpointPolicy } from '../domain/webhook-endpoint.ts';

const ms = (d: Date | null | undefined): bigint => (d ? BigInt(new Date(d).getTime()) : 0n);

export interface AlertsDeps {
  orm: MikroORM;
  policy: EndpointPolicy;
  now: () => Date;
}

/** The AlertsService rpcs (alerts, their delivery log, the audit trail). */
export function alertsHandler(deps: AlertsDeps): ServiceImpl<MethodsOf<typeof alertsV1.AlertsService>> {
  const em = () => deps.orm.em.fork();
  return {
    setAlert: async (req) =>
      setAlert(
        em(),
        {
          accountId: req.accountId,
          lowBalance: req.lowBalance,
          monthlyBudget: req.monthlyBudget,
          budgetThresholds: req.budgetThresholds,
          webhookUrl: req.webhookUrl,
        },
        deps.policy,
        deps.now(),
      ),
    listAlerts: async (req) => ({
      alerts: (await listAlerts(em(), req.accountId)).map((a) => ({
        alertId: a.id,
        accountId: a.account_id,
        lowBalance: BigInt(a.low_balance),
        monthlyBudget: BigInt(a.monthly_budget),
        budgetThresholds: a.budget_thresholds,
        webhookUrl: a.webhook_url,
        lowBalanceArmed: a.low_armed,
        budgetMonth: a.budget_month ?? '',
        budgetSpent: BigInt(a.budget_spent),
        budgetFired: a.budget_fired,
        createdAtUnixMs: ms(a.created_at),
      })),
    }),
    clearAlert: async (req) => {
      await clearAlert(em(), req.alertId, deps.now());
      return {};
    },
    testAlert: async (req) => ({ deliveryId: await testAlert(em(), req.alertId, deps.now()) }),
    listDeliveries: async (req) => ({
      deliveries: (await listDeliveries(em(), req.accountId, req.limit)).map((d) => ({
        deliveryId: d.id,
        alertId: d.alert_id,
        type: d.type,
        status: d.status,
        attempts: d.attempts,
        lastError: d.last_error ?? '',
        createdAtUnixMs: ms(d.created_at),
        nextAttemptAtUnixMs: d.status === 'pending' ? ms(d.next_attempt_at) : 0n,
        deliveredAtUnixMs: ms(d.delivered_at),
        payload: d.payload,
      })),
    }),
    listAuditEvents: async (req) => ({
      events: (await listAudit(em(), req.accountId, req.limit)).map((e) => ({
        eventId: e.id,
        accountId: e.account_id ?? '',
        actor: e.actor,
        origin: e.origin,
        action: e.action,
        details: e.details,
        createdAtUnixMs: ms(e.created_at),
      })),
    }),
  };
}
