import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { nonNegativeInt, UsageError } from '../output.ts';
import { postConsole } from './users.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

const iso = (ms: bigint) => (ms > 0n ? new Date(Number(ms)).toISOString() : null);

/** `50,80,100` → [50, 80, 100]. */
function percentages(raw: string): number[] {
  if (!/^\d+(,\d+)*$/.test(raw.replaceAll(' ', ''))) throw new UsageError('--budget-thresholds is a comma-separated list of percentages, e.g. 50,80,100');
  return raw.replaceAll(' ', '').split(',').map(Number);
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** Alerts on wallets (low balance, monthly budget), their webhook deliveries, and the audit trail. */
export function alertCommands(program: Command, run: Run): void {
  const alert = program.command('alert').description('alerts: a low balance or a monthly budget reached, sent to a webhook');
  alert
    .command('set')
    .description('creates an alert with its webhook and prints its signing secret, the only time it is shown')
    .requiredOption('--account <id>', 'account id')
    .option('--low-balance <credits>', 'alert when the balance falls below this (0 = none)', '0')
    .option('--monthly-budget <credits>', "alert when the month's spending reaches percentages of this (0 = none)", '0')
    .option('--budget-thresholds <list>', 'percentages of the monthly budget, e.g. 50,80,100 (the default)')
    .requiredOption('--webhook <url>', 'https URL that receives the alerts (Standard Webhooks)')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; lowBalance: string; monthlyBudget: string; budgetThresholds?: string; webhook: string; json?: boolean }) =>
      run(async (c) => {
        const budgetThresholds = o.budgetThresholds === undefined ? [] : percentages(o.budgetThresholds);
        const res = await c.alerts.setAlert({
          accountId: o.account,
          lowBalance: nonNegativeInt('--low-balance', o.lowBalance),
          monthlyBudget: nonNegativeInt('--monthly-budget', o.monthlyBudget),
          budgetThresholds,
          webhookUrl: o.webhook,
        });
        return { alert_id: res.alertId, secret: res.secret };
      }, !!o.json),
    );
  alert
    .command('list')
    .description("lists an account's alerts with their state (armed, the month's spending, thresholds reached)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.alerts.listAlerts({ accountId: o.account });
        return {
          alerts: res.alerts.map((a) => ({
            alert_id: a.alertId,
            low_balance: a.lowBalance,
            low_balance_armed: a.lowBalanceArmed,
            monthly_budget: a.monthlyBudget,
            budget_thresholds: a.budgetThresholds,
            budget_month: a.budgetMonth,
            budget_spent: a.budgetSpent,
            budget_reached: a.budgetFired,
            webhook: a.webhookUrl,
            created_at: iso(a.createdAtUnixMs),
          })),
        };
      }, !!o.json),
    );
  alert
    .command('clear')
    .description('removes an alert (its delivery log stays; deliveries not yet sent are dropped)')
    .requiredOption('--alert <id>', 'alert id')
    .option('--json', 'print one JSON object')
    .action((o: { alert: string; json?: boolean }) =>
      run(async (c) => {
        await c.alerts.clearAlert({ alertId: o.alert });
        return { alert_id: o.alert, cleared: true };
      }, !!o.json),
    );
  alert
    .command('test')
    .description("sends the alert's webhook a signed test delivery (alert.test); follow it with alert deliveries")
    .requiredOption('--alert <id>', 'alert id')
    .option('--json', 'print one JSON object')
    .action((o: { alert: string; json?: boolean }) =>
      run(async (c) => ({ delivery_id: (await c.alerts.testAlert({ alertId: o.alert })).deliveryId }), !!o.json),
    );
  alert
    .command('deliveries')
    .description("the account's webhook deliveries, newest first: status, attempts, last error")
    .requiredOption('--account <id>', 'account id')
    .option('--limit <n>', 'how many (1-500)', '100')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; limit: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.alerts.listDeliveries({ accountId: o.account, limit: Number(nonNegativeInt('--limit', o.limit, 500n)) });
        return {
          deliveries: res.deliveries.map((d) => ({
            delivery_id: d.deliveryId,
            alert_id: d.alertId,
            type: d.type,
            status: d.status,
            attempts: d.attempts,
            last_error: d.lastError === '' ? null : d.lastError,
            created_at: iso(d.createdAtUnixMs),
            next_attempt_at: iso(d.nextAttemptAtUnixMs),
            delivered_at: iso(d.deliveredAtUnixMs),
            payload: parse(d.payload),
          })),
        };
      }, !!o.json),
    );

  program
    .command('audit')
    .description(
      "the audit trail, newest first: who changed what, when, from where (an account's; --account none: switches; --catalog: the catalog's; --members --account <id>: the console's member, role and two-step changes)",
    )
    .option('--account <id>', 'account id, or none for changes to no account')
    .option('--catalog', "the catalog's changes (models, prices, aliases, the listing, syncs)")
    .option('--members', "with --account <id>: the console's trail (members added or removed, roles, two-step sign-in and passkeys)")
    .option('--limit <n>', 'how many (1-1000)', '200')
    .option('--json', 'print one JSON object')
    .action((o: { account?: string; catalog?: boolean; members?: boolean; limit: string; json?: boolean }) =>
      run(async (c) => {
        if ((o.account === undefined) === !o.catalog) throw new UsageError('give either --account <id> (or none) or --catalog');
        if (o.members && (o.catalog || o.account === 'none')) throw new UsageError('--members goes with --account <id> (an account id)');
        const limit = Number(nonNegativeInt('--limit', o.limit, 1000n));
        if (o.members) {
          const res = await postConsole('/internal/audit', { account_id: o.account, limit });
          const events = (res.events ?? []) as Array<Record<string, unknown>>;
          return { events: events.map((e) => ({ at: e.created_at, actor: e.actor, origin: e.origin, action: e.action, details: e.details })) };
        }
        if (o.catalog) {
          const res = await c.catalog.listAuditEvents({ limit });
          return { events: res.events.map((e) => ({ event_id: e.eventId, at: iso(e.createdAtUnixMs), actor: e.actor, origin: e.origin, action: e.action, details: parse(e.details) })) };
        }
        const res = await c.alerts.listAuditEvents({ accountId: o.account === 'none' ? '' : o.account!, limit });
        return {
          events: res.events.map((e) => ({
            event_id: e.eventId,
            at: iso(e.createdAtUnixMs),
            actor: e.actor,
            origin: e.origin,
            action: e.action,
            account_id: e.accountId === '' ? null : e.accountId,
            details: parse(e.details),
          })),
        };
      }, !!o.json),
    );
}
