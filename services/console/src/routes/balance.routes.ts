import { isPositiveInt64 } from '@gw/contracts';
import type { FastifyInstance } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { queryParam } from '../http/forms.ts';
import { balancePage, type LedgerLine } from '../views/balance.view.ts';
import { viewerFor } from './viewer.ts';

const PAGE_SIZE = 25;

export async function balanceRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  app.get('/balance', { config: { permission: 'balance.view' } }, async (request, reply) => {
    const ctx = await viewerFor(request, deps);
    const accountId = ctx.member.accountId;
    const given = queryParam(request.query, 'cursor', 19);
    // A ledger position is a positive int64 id; anything else shows the first page.
    const cursor = isPositiveInt64(given) ? given : '';
    const [wallet, ledger, { keys }] = await Promise.all([
      request.billing.getWallet({ accountId }),
      request.billing.listLedger({ accountId, cursor, limit: PAGE_SIZE }),
      request.billing.listKeyDetails({ accountId }),
    ]);
    const keyLabels = new Map(keys.map((k) => [k.info?.keyId ?? '', k.info?.name || `${k.info?.prefix ?? ''}\u2026${k.info?.lastFour ?? ''}`]));
    const lines: LedgerLine[] = ledger.items.map((e) => ({
      kind: e.kind,
      amount: e.amount,
      balanceAfter: e.balanceAfter,
      createdAt: e.createdAtUnixMs,
      model: e.model,
      keyLabel: e.keyId ? (keyLabels.get(e.keyId) ?? '') : '',
      reference: e.reference,
    }));
    return reply
      .type('text/html; charset=utf-8')
      .send(balancePage({ viewer: ctx.viewer, balance: wallet.balance, lines, olderCursor: ledger.nextCursor, isFirstPage: cursor === '' }).value);
  });
}
