import { create } from '@bufbuild/protobuf';
import { alertsV1, billingV1, catalogV1, type CallOptions } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { AlertsClient, BillingClient, CatalogClient } from '../src/billing/clients.ts';

/**
 * Billing as the console sees it, in memory, with the same ownership rule as the real one: a key
 * of another account is `not_found`. Records every call, so tests can show which account a route
 * acted for (always the session's) and that a refused request reached nothing.
 */
export interface FakeKey {
  id: string;
  accountId: string;
  name: string;
  revokedAt: bigint;
  expiresAt: bigint;
  limits: Array<{ limitType: string; period: string; value: bigint }>;
}

export class FakeBilling {
  /** Every call, with the actor and origin its metadata named (`gw-actor`, `gw-actor-origin`). */
  readonly calls: Array<{ method: string; accountId: string; keyId?: string; actor?: string; origin?: string }> = [];
  readonly accounts = new Map<string, { name: string; timeZone: string; balance: bigint }>();
  readonly keys = new Map<string, FakeKey>();
  /** Requests of the activity log, newest first (pages of two). */
  readonly activity: Array<{ accountId: string; requestId: string; clientRequestId: string; keyId: string; endpoint: string; model: string; inputTokens: bigint; outputTokens: bigint; units: bigint; credits: bigint; status: string; latencyMs: bigint; createdAtUnixMs: bigint }> = [];
  /** Billing's alerts, deliveries and audit trail, as billing's AlertsService answers them. */
  readonly alerts = new Map<string, alertsV1.Alert>();
  readonly deliveries: alertsV1.Delivery[] = [];
  readonly auditEvents: alertsV1.AuditEvent[] = [];
  /** Billing's clock (its audit events' times); tests on a moved clock set it. */
  nowMs: () => number = () => Date.now();
  #next = 0;

  addAccount(id: string, name: string): void {
    this.accounts.set(id, { name, timeZone: 'Asia/Ho_Chi_Minh', balance: 1_000_000n });
  }

  addKey(accountId: string, name: string): FakeKey {
    this.#next += 1;
    const id = `00000000-0000-4000-8000-${String(this.#next).padStart(12, '0')}`;
    const key: FakeKey = { id, accountId, name, revokedAt: 0n, expiresAt: 0n, limits: [] };
    this.keys.set(id, key);
    return key;
  }

  #account(accountId: string) {
    const a = this.accounts.get(accountId);
    if (!a) throw new GatewayError('not_found', 'No such account.');
    return a;
  }

  #owned(accountId: string, keyId: string): FakeKey {
    const k = this.keys.get(keyId);
    if (!k || k.accountId !== accountId) throw new GatewayError('not_found', 'No such API key.');
    return k;
  }

  #details(k: FakeKey) {
    return create(billingV1.KeyDetailsSchema, {
      info: { keyId: k.id, accountId: k.accountId, name: k.name, prefix: 'gwk_Test', lastFour: k.id.slice(-4), createdAtUnixMs: 1_740_000_000_000n, expiresAtUnixMs: k.expiresAt, revokedAtUnixMs: k.revokedAt },
      limits: k.limits,
    });
  }

  client(): BillingClient {
    const record = (method: string, opts: CallOptions | undefined, accountId: string, keyId?: string) => {
      const actor = opts?.metadata?.['gw-actor'];
      const origin = opts?.metadata?.['gw-actor-origin'];
      this.calls.push({ method, accountId, ...(keyId ? { keyId } : {}), ...(actor ? { actor } : {}), ...(origin ? { origin } : {}) });
    };
    const impl = {
      getAccount: async (req: { accountId?: string }) => {
        const a = this.#account(req.accountId ?? '');
        return create(billingV1.GetAccountResponseSchema, { accountId: req.accountId ?? '', name: a.name, timeZone: a.timeZone });
      },
      getWallet: async (req: { accountId?: string }, opts?: CallOptions) => {
        record('getWallet', opts, req.accountId ?? '');
        return create(billingV1.GetWalletResponseSchema, { balance: this.#account(req.accountId ?? '').balance });
      },
      listKeyDetails: async (req: { accountId?: string }, opts?: CallOptions) => {
        record('listKeyDetails', opts, req.accountId ?? '');
        const keys = [...this.keys.values()].filter((k) => k.accountId === req.accountId).map((k) => this.#details(k));
        return create(billingV1.ListKeyDetailsResponseSchema, { keys });
      },
      getKeyDetails: async (req: { accountId?: string; keyId?: string }, opts?: CallOptions) => {
        record('getKeyDetails', opts, req.accountId ?? '', req.keyId);
        return create(billingV1.GetKeyDetailsResponseSchema, { key: this.#details(this.#owned(req.accountId ?? '', req.keyId ?? '')) });
      },
      createApiKey: async (req: { accountId?: string; name?: string }, opts?: CallOptions) => {
        record('createApiKey', opts, req.accountId ?? '');
        const k = this.addKey(req.accountId ?? '', req.name ?? '');
        return create(billingV1.CreateApiKeyResponseSchema, { keyId: k.id, apiKey: `gwk_plaintext_${k.id}` });
      },
      revokeAccountKey: async (req: { accountId?: string; keyId?: string }, opts?: CallOptions) => {
        record('revokeAccountKey', opts, req.accountId ?? '', req.keyId);
        const k = this.#owned(req.accountId ?? '', req.keyId ?? '');
        k.revokedAt ||= 1_740_000_100_000n;
        return create(billingV1.RevokeAccountKeyResponseSchema, { revokedAtUnixMs: k.revokedAt });
      },
      setAccountKeyLimit: async (req: { accountId?: string; keyId?: string; limitType?: string; period?: string; value?: bigint }, opts?: CallOptions) => {
        record('setAccountKeyLimit', opts, req.accountId ?? '', req.keyId);
        const k = this.#owned(req.accountId ?? '', req.keyId ?? '');
        k.limits = [...k.limits.filter((l) => l.limitType !== req.limitType || l.period !== req.period), { limitType: req.limitType ?? '', period: req.period ?? '', value: req.value ?? 0n }];
        return create(billingV1.SetAccountKeyLimitResponseSchema, { limits: k.limits });
      },
      clearAccountKeyLimit: async (req: { accountId?: string; keyId?: string; limitType?: string; period?: string }, opts?: CallOptions) => {
        record('clearAccountKeyLimit', opts, req.accountId ?? '', req.keyId);
        const k = this.#owned(req.accountId ?? '', req.keyId ?? '');
        k.limits = k.limits.filter((l) => l.limitType !== req.limitType || l.period !== req.period);
        return create(billingV1.ClearAccountKeyLimitResponseSchema, { limits: k.limits });
      },
      setKeyExpiry: async (req: { accountId?: string; keyId?: string; expiresAtUnixMs?: bigint }, opts?: CallOptions) => {
        record('setKeyExpiry', opts, req.accountId ?? '', req.keyId);
        const k = this.#owned(req.accountId ?? '', req.keyId ?? '');
        if ((req.expiresAtUnixMs ?? 0n) !== 0n && (req.expiresAtUnixMs ?? 0n) < BigInt(Date.now())) throw new GatewayError('invalid_request', 'The expiry must be in the future.');
        k.expiresAt = req.expiresAtUnixMs ?? 0n;
        return create(billingV1.SetKeyExpiryResponseSchema, { key: this.#details(k) });
      },
      usageReport: async (req: { accountId?: string; keyId?: string; fromDate?: string }, opts?: CallOptions) => {
        record('usageReport', opts, req.accountId ?? '', req.keyId);
        if (req.keyId) this.#owned(req.accountId ?? '', req.keyId);
        const totals = { requests: 2n, inputTokens: 10n, outputTokens: 20n, totalTokens: 30n, credits: 1234n };
        return create(billingV1.UsageReportResponseSchema, {
          rows: [
            { group: '=HYPERLINK("x")', totals },
            { group: req.fromDate ?? '', totals: {} },
          ],
          totals,
          timeZone: 'Asia/Ho_Chi_Minh',
        });
      },
      listLedger: async (req: { accountId?: string }, opts?: CallOptions) => {
        record('listLedger', opts, req.accountId ?? '');
        return create(billingV1.ListLedgerResponseSchema, {
          items: [{ entryId: '2', kind: 'charge', amount: -1234n, balanceAfter: 998_766n, createdAtUnixMs: 1_740_000_000_000n, model: 'gpt-sim-mini', reference: 'req-1' }],
          nextCursor: '',
        });
      },
      listActivity: async (req: { accountId?: string; keyId?: string; cursor?: string }, opts?: CallOptions) => {
        record('listActivity', opts, req.accountId ?? '', req.keyId);
        if (req.keyId) this.#owned(req.accountId ?? '', req.keyId);
        const items = this.activity.filter((a) => a.accountId === req.accountId && (!req.keyId || a.keyId === req.keyId));
        const start = req.cursor ? items.findIndex((a) => a.requestId === req.cursor) + 1 : 0;
        const page = items.slice(start, start + 2);
        return create(billingV1.ListActivityResponseSchema, {
          items: page,
          nextCursor: start + 2 < items.length ? page[page.length - 1]!.requestId : '',
          timeZone: 'Asia/Ho_Chi_Minh',
        });
      },
    };
    return impl as unknown as BillingClient;
  }
}

/** Billing's AlertsService in memory, recording its calls (with their actor) in the same list. */
export function fakeAlerts(billing: FakeBilling): AlertsClient {
  const record = (method: string, opts: CallOptions | undefined, accountId: string) => {
    const actor = opts?.metadata?.['gw-actor'];
    const origin = opts?.metadata?.['gw-actor-origin'];
    billing.calls.push({ method, accountId, ...(actor ? { actor } : {}), ...(origin ? { origin } : {}) });
    // Billing records every change in its audit trail with the caller's actor and origin.
    if (['setAlert', 'clearAlert'].includes(method)) {
      billing.auditEvents.unshift(
        create(alertsV1.AuditEventSchema, { eventId: crypto.randomUUID(), accountId, actor: actor ?? 'unknown', origin: origin ?? '', action: `alerts.${method[0]!.toUpperCase()}${method.slice(1)}`, details: '{}', createdAtUnixMs: BigInt(billing.nowMs()) }),
      );
    }
  };
  const owned = (alertId: string) => {
    const a = billing.alerts.get(alertId);
    if (!a) throw new GatewayError('not_found', 'No such alert.');
    return a;
  };
  const impl = {
    setAlert: async (req: { accountId?: string; lowBalance?: bigint; monthlyBudget?: bigint; budgetThresholds?: number[]; webhookUrl?: string }, opts?: CallOptions) => {
      if (!(req.webhookUrl ?? '').startsWith('https://')) throw new GatewayError('invalid_request', 'The webhook URL must be https on a public address.');
      const alertId = crypto.randomUUID();
      const thresholds = req.budgetThresholds?.length ? req.budgetThresholds : req.monthlyBudget ? [50, 80, 100] : [];
      billing.alerts.set(
        alertId,
        create(alertsV1.AlertSchema, { alertId, accountId: req.accountId ?? '', lowBalance: req.lowBalance ?? 0n, monthlyBudget: req.monthlyBudget ?? 0n, budgetThresholds: thresholds, webhookUrl: req.webhookUrl ?? '', lowBalanceArmed: true, createdAtUnixMs: 1_740_000_000_000n }),
      );
      record('setAlert', opts, req.accountId ?? '');
      return create(alertsV1.SetAlertResponseSchema, { alertId, secret: `whsec_${Buffer.from(alertId).toString('base64')}` });
    },
    listAlerts: async (req: { accountId?: string }) =>
      create(alertsV1.ListAlertsResponseSchema, { alerts: [...billing.alerts.values()].filter((a) => a.accountId === req.accountId) }),
    clearAlert: async (req: { alertId?: string }, opts?: CallOptions) => {
      const a = owned(req.alertId ?? '');
      billing.alerts.delete(a.alertId);
      record('clearAlert', opts, a.accountId);
      return create(alertsV1.ClearAlertResponseSchema, {});
    },
    testAlert: async (req: { alertId?: string }, opts?: CallOptions) => {
      const a = owned(req.alertId ?? '');
      record('testAlert', opts, a.accountId);
      const deliveryId = `alrt_${crypto.randomUUID().replaceAll('-', '')}`;
      billing.deliveries.unshift(create(alertsV1.DeliverySchema, { deliveryId, alertId: a.alertId, type: 'alert.test', status: 'pending', attempts: 0, createdAtUnixMs: 1_740_000_000_000n }));
      return create(alertsV1.TestAlertResponseSchema, { deliveryId });
    },
    listDeliveries: async (req: { accountId?: string }) => {
      const ids = new Set([...billing.alerts.values()].filter((a) => a.accountId === req.accountId).map((a) => a.alertId));
      return create(alertsV1.ListDeliveriesResponseSchema, { deliveries: billing.deliveries.filter((d) => ids.has(d.alertId)) });
    },
    listAuditEvents: async (req: { accountId?: string; limit?: number }) =>
      create(alertsV1.ListAuditEventsResponseSchema, { events: billing.auditEvents.filter((e) => e.accountId === req.accountId).slice(0, req.limit || 200) }),
  };
  return impl as unknown as AlertsClient;
}

export function fakeCatalog(): CatalogClient {
  const impl = {
    listModels: async () => create(catalogV1.ListModelsResponseSchema, { models: [{ id: 'gpt-sim-mini', kind: catalogV1.ModelKind.TEXT }] }),
  };
  return impl as unknown as CatalogClient;
}
