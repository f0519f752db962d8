import type { billingV1 } from '@gw/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { toKeyView, type KeyView } from '../billing/key-view.ts';
import { queryParam } from '../http/forms.ts';
import type { Notice } from '../views/layout.ts';
import { usageCsv, usagePage, type UsageGroup, type UsageLine, type UsageQuery, type UsageSums } from '../views/usage.view.ts';
import { addDays, dateIn, daysBetween, isDate } from '../views/zoned-time.ts';
import { viewerFor } from './viewer.ts';

/** The longest period one report may cover (billing enforces the same bound). */
const MAX_DAYS = 366;
const DEFAULT_DAYS = 30;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GROUP_ENUM: Record<UsageGroup, number> = { day: 1, model: 2, key: 3 };

/**
 * The period and scope from the query; anything missing or invalid falls back to the last 30
 * days of the whole account by day, with a notice saying what was ignored.
 */
function parseQuery(query: unknown, timeZone: string, nowMs: number): { q: UsageQuery; notice?: Notice } {
  const today = dateIn(nowMs, timeZone);
  const fallback: UsageQuery = { from: addDays(today, -(DEFAULT_DAYS - 1)), to: today, keyId: '', group: 'day' };
  const from = queryParam(query, 'from', 10);
  const to = queryParam(query, 'to', 10);
  const keyId = queryParam(query, 'key', 36);
  const group = queryParam(query, 'group', 8);
  const q: UsageQuery = {
    from: from || fallback.from,
    to: to || fallback.to,
    keyId: keyId && UUID.test(keyId) ? keyId.toLowerCase() : '',
    group: group === 'model' || group === 'key' ? group : 'day',
  };
  if (!isDate(q.from) || !isDate(q.to)) return { q: { ...fallback, keyId: q.keyId, group: q.group }, notice: { kind: 'error', text: 'The dates were not valid; showing the last 30 days.' } };
  if (daysBetween(q.from, q.to) < 0) return { q: { ...q, from: q.to, to: q.from } };
  if (daysBetween(q.from, q.to) + 1 > MAX_DAYS) {
    return { q: { ...q, from: addDays(q.to, -(MAX_DAYS - 1)) }, notice: { kind: 'error', text: `A report covers at most ${MAX_DAYS} days; the start was moved.` } };
  }
  return { q };
}

function sums(t: billingV1.UsageTotals | undefined): UsageSums {
  return {
    requests: t?.requests ?? 0n,
    inputTokens: t?.inputTokens ?? 0n,
    outputTokens: t?.outputTokens ?? 0n,
    totalTokens: t?.totalTokens ?? 0n,
    images: t?.images ?? 0n,
    videoSeconds: t?.videoSeconds ?? 0n,
    credits: t?.credits ?? 0n,
  };
}

export async function usageRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  /** Model kinds for labels; the report still shows model ids when the catalog cannot answer. */
  async function modelKinds(request: FastifyRequest): Promise<Map<string, string>> {
    try {
      const { models } = await deps.catalog.listModels({ listableOnly: false });
      const kinds = ['', 'text', 'image', 'video'];
      return new Map(models.map((m) => [m.id, kinds[m.kind] ?? '']));
    } catch (err) {
      request.log.warn({ err }, 'catalog unavailable: usage shows model ids only');
      return new Map();
    }
  }

  async function report(request: FastifyRequest) {
    const ctx = await viewerFor(request, deps);
    const { q, notice } = parseQuery(request.query, ctx.viewer.timeZone, deps.now().getTime());
    const accountId = ctx.member.accountId;
    const [{ keys: rawKeys }, res] = await Promise.all([
      request.billing.listKeyDetails({ accountId }),
      request.billing.usageReport({
        accountId,
        keyId: q.keyId,
        fromDate: q.from,
        toDate: q.to,
        groupBy: GROUP_ENUM[q.group],
        // Days in the zone the member reads times in, so the table and the timestamps agree.
        timeZone: ctx.viewer.timeZone,
      }),
    ]);
    const now = deps.now().getTime();
    const keys: KeyView[] = rawKeys.map((k) => toKeyView(k, now));
    const names = new Map(keys.map((k) => [k.id, k.name ? `${k.name} (${k.display})` : k.display]));
    const kinds = q.group === 'model' ? await modelKinds(request) : new Map<string, string>();
    const lines: UsageLine[] = res.rows.map((r) => {
      const label =
        q.group === 'key' ? (names.get(r.group) ?? (r.group || 'no key')) : q.group === 'model' && kinds.get(r.group) ? `${r.group} (${kinds.get(r.group)})` : r.group;
      return { group: r.group, label, sums: sums(r.totals) };
    });
    return { ctx, q, notice, keys, lines, totals: sums(res.totals), timeZone: res.timeZone };
  }

  app.get('/usage', { config: { permission: 'usage.view' } }, async (request, reply: FastifyReply) => {
    const r = await report(request);
    return reply
      .code(r.notice ? 400 : 200)
      .type('text/html; charset=utf-8')
      .send(usagePage({ viewer: r.ctx.viewer, query: r.q, keys: r.keys, lines: r.lines, totals: r.totals, notice: r.notice }).value);
  });

  app.get('/usage.csv', { config: { permission: 'usage.view' } }, async (request, reply) => {
    const r = await report(request);
    const scope = r.q.keyId ? `-key-${r.q.keyId.slice(0, 8)}` : '';
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="usage-${r.q.group}-${r.q.from}-to-${r.q.to}${scope}.csv"`)
      .send(usageCsv(r.q, r.lines, r.timeZone));
  });
}
