import type { MessageInitShape } from '@bufbuild/protobuf';
import { billingV1, serveExchange, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { MikroORM } from '@mikro-orm/postgresql';
import { lookupApiKey } from '../domain/api-keys.ts';
import { renewLease } from '../domain/hold-sweeper.ts';
import { checkRateLimit, type RateDefaults } from '../domain/rate-limit.ts';
import type { RequestMoney } from '../domain/requests.ts';
import { getSwitches } from '../domain/switches.ts';
import { ms } from './shapes.ts';

export interface BillingDeps {
  orm: MikroORM;
  money: RequestMoney;
  rateDefaults: RateDefaults;
  now: () => Date;
  /** How long a hold owner's lease lasts after a renewal (default 60 s). */
  holdLeaseMs?: number;
}

const EXCHANGE_METHODS = { authorize: 'Authorize', settle: 'Settle', release: 'Release' } as const;

/** One exchange call: the same work as the unary rpc it stands for. */
async function exchangeCall(money: RequestMoney, req: billingV1.ExchangeCall): Promise<MessageInitShape<typeof billingV1.ExchangeReplySchema>['result']> {
  switch (req.call.case) {
    case 'authorize':
      return { case: 'authorize', value: await money.authorize(req.call.value) };
    case 'settle':
      return { case: 'settle', value: await money.settle(req.call.value) };
    case 'release':
      return { case: 'release', value: await money.release(req.call.value) };
    default:
      throw new GatewayError('invalid_request', 'An exchange call must carry a call.');
  }
}

/** The BillingService rpcs: a billed request's calls. Each call works in its own forked EntityManager. */
export function billingHandler(deps: BillingDeps): ServiceImpl<MethodsOf<typeof billingV1.BillingService>> {
  const em = () => deps.orm.em.fork();
  return {
    lookupApiKey: async (req) => {
      const k = await lookupApiKey(em(), req.keyHash);
      return { keyId: k.id, accountId: k.accountId, revokedAtUnixMs: ms(k.revokedAt), expiresAtUnixMs: ms(k.expiresAt) };
    },
    checkRateLimit: async (req) => {
      await checkRateLimit(em(), req.accountId, deps.now().getTime(), deps.rateDefaults);
      return {};
    },
    authorize: async (req) => deps.money.authorize(req),
    settle: async (req) => deps.money.settle(req),
    release: async (req) => deps.money.release(req),
    refund: async (req) => deps.money.refund(req),
    renewLease: async (req) => ({ leaseUntilUnixMs: ms(await renewLease(em(), req.owner, deps.holdLeaseMs ?? 60_000, deps.now())) }),
    exchange: (call, ctx) =>
      serveExchange(call, ctx, {
        service: billingV1.BillingService.typeName,
        methodOf: (req) => (req.call.case ? EXCHANGE_METHODS[req.call.case] : 'Exchange'),
        handle: (req) => exchangeCall(deps.money, req),
      }),
    getSwitches: async () => getSwitches(em()),
  };
}
