import type { FastifyInstance } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { queryParam } from '../http/forms.ts';
import { auditPage, type AuditLine } from '../views/audit.view.ts';
import { viewerFor } from './viewer.ts';

const PAGE_SIZE = 50;
/** The newest changes the page reads (billing answers at most 1000 a call); older ones: `pnpm admin audit`. */
const WINDOW = 1000;

/**
 * The account's audit trail (`audit.view`: owners, admins), newest first, 50 a page: billing's
 * (keys, limits, expiries, alerts, top-ups, …) and the console's own (members and roles), merged
 * by time. A member actor is shown with their e-mail address while they are a member.
 */
export async function auditRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  app.get('/audit', { config: { permission: 'audit.view' } }, async (request, reply) => {
    const ctx = await viewerFor(request, deps);
    const accountId = ctx.member.accountId;
    const raw = queryParam(request.query, 'page', 4);
    const pageNo = /^[1-9][0-9]{0,3}$/.test(raw) ? Number(raw) : 1;
    const [{ events }, consoleEvents, members] = await Promise.all([
      request.alerts.listAuditEvents({ accountId, limit: WINDOW }),
      deps.members.auditEvents(accountId, WINDOW),
      deps.members.list(accountId),
    ]);
    const emails = new Map(members.map((m) => [`member:${m.memberId}`, m.email]));
    const lines: AuditLine[] = [
      ...events.map((e) => ({ at: e.createdAtUnixMs, actor: e.actor, origin: e.origin, action: e.action, details: e.details })),
      ...consoleEvents.map((e) => ({ at: BigInt(e.at.getTime()), actor: e.actor, origin: e.origin, action: e.action, details: e.details })),
    ]
      .sort((a, b) => (a.at === b.at ? 0 : a.at > b.at ? -1 : 1))
      .slice(0, WINDOW)
      .map((l) => ({ ...l, actor: emails.has(l.actor) ? `${emails.get(l.actor)} (${l.actor})` : l.actor }));
    const start = (pageNo - 1) * PAGE_SIZE;
    return reply
      .type('text/html; charset=utf-8')
      .send(auditPage({ viewer: ctx.viewer, lines: lines.slice(start, start + PAGE_SIZE), page: pageNo, hasOlder: start + PAGE_SIZE < lines.length }).value);
  });
}
