import type { FastifyInstance } from 'fastify';
import type { RouteDeps } from '../app.ts';
import { queryParam } from '../http/forms.ts';
import { balancePage, type LedgerLine } from '../views/balance.view.ts';
import { viewerFor } from './viewer.ts';

const PAGE_SIZE = 25;
const CURSOR = /^[1-9][0-9]{0,18}$/;
/** A ledger position: a positive bigint (int64) id, else the first page. */
const isCursor = (given: string) => CURSOR.test(given) && BigInt(given) <= 9_223_372_036_854_775_807n;

export async function balanceRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  app.get('/balance', async (request, reply) => {
    const ctx = await viewerFor(request, deps);
    const accountId = ctx.member.accountId;
    const given = queryParam(request.query, 'cursor', 19);
    const cursor = isCursor(given) ? given : '';
    const [wallet, ledger, { keys }] = await Promise.all([
      deps.billing.getWallet({ accountId }),
      deps.billing.listLedger({ accountId, cursor, limit: PAGE_SIZE }),
      deps.billing.listKeyDetails({ accountId }),
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
