import { create, toBinary } from '@bufbuild/protobuf';
import { randomBytes, randomUUID } from 'node:crypto';
import { eventsV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { requireUuid } from './inputs.ts';
import { checkedWebhookUrl, postWebhook, signWebhook, type EndpointPolicy } from './webhook-endpoint.ts';

/** The NATS subjects of crossings: `billing.alert.low_balance`, `billing.alert.budget_threshold`. */
export const ALERT_SUBJECT_PREFIX = 'billing.alert.';
export const DEFAULT_BUDGET_THRESHOLDS = [50, 80, 100];
/** Alerts an account may have at once (each has its own endpoint). */
export const ALERTS_PER_ACCOUNT = 10;
const CREDITS_MAX = 9_223_372_036_854_775_807n;

export interface AlertSettings {
  accountId: string;
  lowBalance: bigint;
  monthlyBudget: bigint;
  budgetThresholds: number[];
  webhookUrl: string;
}

export interface AlertRow {
  id: string;
  account_id: string;
  low_balance: string;
  monthly_budget: string;
  budget_thresholds: number[];
  webhook_url: string;
  low_armed: boolean;
  budget_month: string | null;
  budget_spent: string;
  budget_fired: number[];
  created_at: Date;
}

/**
 * Creates an alert and answers its id and signing secret (`whsec_` + 32 random bytes, base64),
 * which is not shown again. Under the wallet's lock (as the ledger trigger works), it starts armed
 * only if the balance is at or above its threshold (a wallet already low alerts again after a
 * top-up lifts it), with the month's spending so far counted from the usage records.
 */
export async function setAlert(em: EntityManager, s: AlertSettings, policy: EndpointPolicy, now: Date): Promise<{ alertId: string; secret: string }> {
  requireUuid(s.accountId, 'account');
  if (s.lowBalance < 0n || s.monthlyBudget < 0n || s.lowBalance > CREDITS_MAX || s.monthlyBudget > CREDITS_MAX) {
    throw new GatewayError('invalid_request', 'low_balance and monthly_budget are credits, 0 or more (0 = none).');
  }
  if (s.lowBalance === 0n && s.monthlyBudget === 0n) {
    throw new GatewayError('invalid_request', 'An alert needs a low-balance threshold, a monthly budget, or both.');
  }
  const thresholds = s.monthlyBudget > 0n ? (s.budgetThresholds.length > 0 ? s.budgetThresholds : DEFAULT_BUDGET_THRESHOLDS) : [];
  if (thresholds.some((t) => !Number.isInteger(t) || t < 1 || t > 1000) || new Set(thresholds).size !== thresholds.length || thresholds.length > 20) {
    throw new GatewayError('invalid_request', 'Budget thresholds are up to 20 different whole percentages from 1 to 1000, e.g. 50,80,100.');
  }
  const url = await checkedWebhookUrl(s.webhookUrl, policy);
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const id = randomUUID();
  await em.transactional(async (tx) => {
    const [wallet] = await tx.execute<{ balance: string; time_zone: string }[]>(
      `select w.balance::text, a.time_zone from wallet w join account a on a.id = w.account_id where w.account_id = ? for update of w`,
      [s.accountId],
    );
    if (!wallet) throw new GatewayError('not_found', 'No such account.');
    const [count] = await tx.execute<{ n: number }[]>('select count(*)::int as n from alert where account_id = ? and cleared_at is null', [s.accountId]);
    if ((count?.n ?? 0) >= ALERTS_PER_ACCOUNT) {
      throw new GatewayError('invalid_request', `An account has at most ${ALERTS_PER_ACCOUNT} alerts: clear one first (alert list shows them).`);
    }
    await tx.execute(
      `insert into alert (id, account_id, low_balance, monthly_budget, budget_thresholds, webhook_url, secret, low_armed,
                          budget_month, budget_spent, created_at)
       select ?, ?, ?, ?, ?::integer[], ?, ?, ?, m.month,
              (select coalesce(sum(u.credits), 0) from usage_record u
                where u.account_id = ? and u.created_at >= (m.month::timestamp at time zone ?)), ?
         from (select date_trunc('month', ?::timestamptz at time zone ?)::date as month) m`,
      [id, s.accountId, s.lowBalance, s.monthlyBudget, `{${[...thresholds].sort((a, b) => a - b).join(',')}}`, url, secret,
       BigInt(wallet.balance) >= s.lowBalance, s.accountId, wallet.time_zone, now, now.toISOString(), wallet.time_zone],
    );
  });
  return { alertId: id, secret };
}

export async function listAlerts(em: EntityManager, accountId: string): Promise<AlertRow[]> {
  requireUuid(accountId, 'account');
  return em.execute<AlertRow[]>(
    `select id, account_id, low_balance::text, monthly_budget::text, budget_thresholds, webhook_url, low_armed,
            to_char(budget_month, 'YYYY-MM-DD') as budget_month, budget_spent::text, budget_fired, created_at
       from alert where account_id = ? and cleared_at is null order by created_at, id`,
    [accountId],
  );
}

/** Clears an alert: it detects nothing more, its pending deliveries are dropped, its log stays. Answers its account. */
export async function clearAlert(em: EntityManager, alertId: string, now: Date): Promise<string> {
  requireUuid(alertId, 'alert');
  return em.transactional(async (tx) => {
    const [row] = await tx.execute<{ account_id: string }[]>(
      'update alert set cleared_at = ? where id = ? and cleared_at is null returning account_id',
      [now, alertId],
    );
    if (!row) throw new GatewayError('not_found', 'No such alert (or it was cleared already).');
    await tx.execute(
      `update alert_event set status = 'failed', last_error = 'the alert was cleared' where alert_id = ? and status = 'pending'`,
      [alertId],
    );
    return row.account_id;
  });
}

/**
 * Queues a test delivery (`alert.test`) to the alert's endpoint, sent and retried like a crossing;
 * marked published, so it never goes to NATS. Answers its id.
 */
export async function testAlert(em: EntityManager, alertId: string, now: Date): Promise<string> {
  requireUuid(alertId, 'alert');
  const id = `alrt_${randomUUID().replaceAll('-', '')}`;
  const rows = await em.execute<{ id: string }[]>(
    `insert into alert_event (id, alert_id, account_id, type, payload, next_attempt_at, created_at, published)
     select ?, a.id, a.account_id, 'alert.test',
            jsonb_build_object('type', 'alert.test', 'timestamp', ?::timestamptz, 'data', jsonb_build_object('alert_id', a.id, 'account_id', a.account_id)),
            ?, ?, true
       from alert a where a.id = ? and a.cleared_at is null
     returning id`,
    [id, now.toISOString(), now, now, alertId],
  );
  if (rows.length === 0) throw new GatewayError('not_found', 'No such alert (or it was cleared).');
  return id;
}

export interface DeliveryRow {
  id: string;
  alert_id: string;
  type: string;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  next_attempt_at: Date;
  delivered_at: Date | null;
  payload: string;
}

export async function listDeliveries(em: EntityManager, accountId: string, limit: number): Promise<DeliveryRow[]> {
  requireUuid(accountId, 'account');
  const n = limit <= 0 ? 100 : Math.min(limit, 500);
  return em.execute<DeliveryRow[]>(
    `select id, alert_id, type, status, attempts, last_error, created_at, next_attempt_at, delivered_at, payload::text as payload
       from alert_event where account_id = ? order by created_at desc, id desc limit ?`,
    [accountId, n],
  );
}

/**
 * Puts the NATS event of every crossing not yet published into the outbox, in one transaction
 * that marks them published: each crossing is announced once (the relay publishes it with its id
 * as the message id). Answers how many.
 */
export async function queueAlertEvents(orm: MikroORM, batch = 100): Promise<number> {
  return orm.em.fork().transactional(async (tx) => {
    const rows = await tx.execute<{ id: string; payload: { type: string; data: Record<string, string | number> }; created_at: Date }[]>(
      `select id, payload, created_at from alert_event where not published order by created_at, id limit ? for update skip locked`,
      [batch],
    );
    for (const row of rows) {
      const d = row.payload.data;
      const kind = row.payload.type.replace(/^alert\./, '');
      const event = create(eventsV1.AlertCrossedSchema, {
        eventId: row.id,
        alertId: String(d['alert_id']),
        accountId: String(d['account_id']),
        kind,
        balance: BigInt(d['balance'] ?? 0),
        threshold: BigInt(kind === 'low_balance' ? (d['threshold'] ?? 0) : (d['budget'] ?? 0)),
        percent: Number(d['percent'] ?? 0),
        spent: BigInt(d['spent'] ?? 0),
        month: String(d['month'] ?? ''),
        occurredAtUnixMs: BigInt(new Date(row.created_at).getTime()),
      });
      enqueueEvent(tx, { subject: ALERT_SUBJECT_PREFIX + kind, payload: toBinary(eventsV1.AlertCrossedSchema, event), msgId: row.id });
    }
    if (rows.length > 0) {
      await tx.flush();
      await tx.execute('update alert_event set published = true where id = any(?::text[])', [`{${rows.map((r) => r.id).join(',')}}`]);
    }
    return rows.length;
  });
}

export interface SenderOptions {
  policy: EndpointPolicy;
  /** Wait before each retry: after the first failed attempt, the second... its length + 1 attempts in all. */
  retryDelaysMs: number[];
  timeoutMs: number;
  maxResponseBytes: number;
  /** Deliveries claimed per round. */
  batch?: number;
}

/** 10 s, 1 min, 5 min, 30 min, 2 h, 8 h, 24 h: eight attempts over about 35 hours. */
export const DEFAULT_RETRY_DELAYS_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 28_800_000, 86_400_000];

/**
 * One round of webhook deliveries: claims the due ones (each claim counts an attempt and moves
 * its next attempt past the request's time bound, so another replica does not send it meanwhile),
 * posts each signed (Standard Webhooks), and records the outcome: delivered on a 2xx answer,
 * otherwise retried after the next delay, failed after the last. Answers how many were attempted.
 */
export async function deliverWebhooks(orm: MikroORM, opts: SenderOptions, now: () => Date): Promise<number> {
  const em = orm.em.fork();
  const claimed = await em.execute<{ id: string; body: string; attempts: number; webhook_url: string; secret: string }[]>(
    `update alert_event e set attempts = e.attempts + 1, next_attempt_at = ?::timestamptz + make_interval(secs => ?)
       from alert a
      where a.id = e.alert_id
        and e.id in (select id from alert_event where status = 'pending' and next_attempt_at <= ?
                      order by next_attempt_at limit ? for update skip locked)
     returning e.id, e.payload::text as body, e.attempts, a.webhook_url, a.secret`,
    [now().toISOString(), (opts.timeoutMs * 2) / 1000, now().toISOString(), opts.batch ?? 20],
  );
  await Promise.all(
    claimed.map(async (d) => {
      const timestamp = Math.floor(now().getTime() / 1000);
      const outcome = await postWebhook(
        d.webhook_url,
        { 'webhook-id': d.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signWebhook(d.secret, d.id, timestamp, d.body) },
        d.body,
        { policy: opts.policy, timeoutMs: opts.timeoutMs, maxResponseBytes: opts.maxResponseBytes },
      );
      if ('status' in outcome && outcome.status >= 200 && outcome.status < 300) {
        // Only while still pending: an alert cleared meanwhile keeps its delivery `failed`.
        await em.execute(`update alert_event set status = 'delivered', delivered_at = ? where id = ? and status = 'pending'`, [now(), d.id]);
        return;
      }
      const error = 'status' in outcome ? `HTTP ${outcome.status}${outcome.body.trim() === '' ? '' : `: ${outcome.body.trim().slice(0, 200)}`}` : outcome.error;
      const delay = opts.retryDelaysMs[d.attempts - 1];
      await em.execute(
        `update alert_event set last_error = ?, status = ?, next_attempt_at = ?::timestamptz + make_interval(secs => ?) where id = ? and status = 'pending'`,
        [error.slice(0, 500), delay === undefined ? 'failed' : 'pending', now().toISOString(), (delay ?? 0) / 1000, d.id],
      );
    }),
  );
  return claimed.length;
}
