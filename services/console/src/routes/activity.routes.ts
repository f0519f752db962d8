import { GatewayError } from '@gw/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import type { billingV1 } from '@gw/contracts';
import { toKeyView, type KeyView } from '../billing/key-view.ts';
import { queryParam } from '../http/forms.ts';
import { ACTIVITY_STATUSES, activityCsv, activityPage, type ActivityFilter, type ActivityLine } from '../views/activity.view.ts';
import type { Notice } from '../views/layout.ts';
import { isDate } from '../views/zoned-time.ts';
import { viewerFor } from './viewer.ts';

const PAGE_SIZE = 50;
/** The CSV reads the log in billing's largest pages, up to this many requests. */
const CSV_PAGE = 200;
const CSV_MAX_ROWS = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MODEL_ID = /^[A-Za-z0-9._:/-]{1,128}$/;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The filter from the query; a value that cannot be one is dropped, with a notice saying so. */
function parseFilter(query: unknown): { filter: ActivityFilter; cursor: string; notice?: Notice } {
  const raw = {
    keyId: queryParam(query, 'key', 36),
    model: queryParam(query, 'model', 128),
    status: queryParam(query, 'status', 16),
    from: queryParam(query, 'from', 10),
    to: queryParam(query, 'to', 10),
  };
  const filter: ActivityFilter = {
    keyId: UUID.test(raw.keyId) ? raw.keyId.toLowerCase() : '',
    model: MODEL_ID.test(raw.model) ? raw.model : '',
    status: Object.hasOwn(ACTIVITY_STATUSES, raw.status) ? raw.status : '',
    from: isDate(raw.from) ? raw.from : '',
    to: isDate(raw.to) ? raw.to : '',
  };
  if (filter.from && filter.to && filter.to < filter.from) [filter.from, filter.to] = [filter.to, filter.from];
  const cursor = queryParam(query, 'cursor', 128);
  const dropped = (Object.keys(raw) as Array<keyof ActivityFilter>).filter((k) => raw[k] !== '' && filter[k] === '');
  return {
    filter,
    cursor: REQUEST_ID.test(cursor) ? cursor : '',
    ...(dropped.length > 0 ? { notice: { kind: 'error' as const, text: 'Some filters were not valid and are ignored.' } } : {}),
  };
}

/** Rows as the page and the CSV show them, with each key's name. */
function toLines(items: billingV1.ActivityItem[], keys: KeyView[]): ActivityLine[] {
  const labels = new Map(keys.map((k) => [k.id, k.name || k.display]));
  return items.map((a) => ({
    requestId: a.requestId,
    clientRequestId: a.clientRequestId,
    createdAt: a.createdAtUnixMs,
    keyId: a.keyId,
    keyLabel: labels.get(a.keyId) ?? a.keyId,
    endpoint: a.endpoint,
    model: a.model,
    inputTokens: a.inputTokens,
    outputTokens: a.outputTokens,
    units: a.units,
    credits: a.credits,
    status: a.status,
    latencyMs: a.latencyMs,
  }));
}

/** The activity log: one row per billed request, filtered and paged (billing's ListActivity). */
export async function activityRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  async function modelIds(request: FastifyRequest): Promise<string[]> {
    try {
      const { models } = await deps.catalog.listModels({ listableOnly: false });
      return models.map((m) => m.id).toSorted();
    } catch (err) {
      request.log.warn({ err }, 'catalog unavailable: the activity model filter lists no models');
      return [];
    }
  }

  app.get('/activity', { config: { permission: 'usage.view' } }, async (request, reply) => {
    const ctx = await viewerFor(request, deps);
    const accountId = ctx.member.accountId;
    let { filter, cursor, notice } = parseFilter(request.query);
    const [{ keys: rawKeys }, models] = await Promise.all([request.billing.listKeyDetails({ accountId }), modelIds(request)]);
    const list = (f: ActivityFilter, c: string) =>
      request.billing.listActivity({ accountId, keyId: f.keyId, model: f.model, status: f.status, fromDate: f.from, toDate: f.to, timeZone: ctx.viewer.timeZone, cursor: c, limit: PAGE_SIZE });
    let res;
    try {
      res = await list(filter, cursor);
    } catch (err) {
      // A key of another account (not_found) or a stale cursor: the first page without them.
      if (!(err instanceof GatewayError) || (err.code !== 'not_found' && err.code !== 'invalid_request')) throw err;
      filter = err.code === 'not_found' ? { ...filter, keyId: '' } : filter;
      cursor = '';
      notice = { kind: 'error', text: err.code === 'not_found' ? 'That key is not one of this account; showing every key.' : 'That page is gone; showing the newest requests.' };
      res = await list(filter, cursor);
    }
    const keys = rawKeys.map((k) => toKeyView(k, deps.now().getTime()));
    const lines = toLines(res.items, keys);
    return reply
      .code(notice ? 400 : 200)
      .type('text/html; charset=utf-8')
      .send(activityPage({ viewer: ctx.viewer, filter, keys, models, lines, olderCursor: res.nextCursor, isFirstPage: cursor === '', notice }).value);
  });

  // The filtered log as CSV, newest first, to match a charge with a request id offline. Invalid
  // filters are dropped as on the page; a key of another account answers 404.
  app.get('/activity.csv', { config: { permission: 'usage.view' } }, async (request, reply) => {
    const ctx = await viewerFor(request, deps);
    const accountId = ctx.member.accountId;
    const { filter } = parseFilter(request.query);
    const { keys: rawKeys } = await request.billing.listKeyDetails({ accountId });
    const items: billingV1.ActivityItem[] = [];
    let cursor = '';
    do {
      const res = await request.billing.listActivity({ accountId, keyId: filter.keyId, model: filter.model, status: filter.status, fromDate: filter.from, toDate: filter.to, timeZone: ctx.viewer.timeZone, cursor, limit: CSV_PAGE });
      items.push(...res.items);
      cursor = res.nextCursor;
    } while (cursor !== '' && items.length < CSV_MAX_ROWS);
    const keys = rawKeys.map((k) => toKeyView(k, deps.now().getTime()));
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="activity${filter.from ? `-from-${filter.from}` : ''}${filter.to ? `-to-${filter.to}` : ''}.csv"`)
      .send(activityCsv(toLines(items.slice(0, CSV_MAX_ROWS), keys)));
  });
}
