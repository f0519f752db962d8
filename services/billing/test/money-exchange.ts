import type { MessageInitShape } from '@bufbuild/protobuf';
import { billingV1, createClient, ExchangeClient, type CallOptions } from '@gw/contracts';
import { HoldLease } from '@gw/service-kit';

type Call = 'authorize' | 'settle' | 'release';
type Req<C extends Call> = MessageInitShape<
  { authorize: typeof billingV1.AuthorizeRequestSchema; settle: typeof billingV1.SettleRequestSchema; release: typeof billingV1.ReleaseRequestSchema }[C]
>;
type Res<C extends Call> = { authorize: billingV1.AuthorizeResponse; settle: billingV1.SettleResponse; release: billingV1.ReleaseResponse }[C];

/**
 * Authorize, Settle and Release over billing's Exchange stream, each hold leased to this process
 * and the lease renewed from the first hold on: billing called as gateways call it (their client is
 * the edge's `generation/billing-exchange.ts`, which a test here may not import).
 */
export function moneyExchange(address: string, opts: { leaseRenewMs?: number } = {}) {
  const client = createClient(billingV1.BillingService, address);
  const lease = new HoldLease();
  const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), { service: billingV1.BillingService.typeName, resend: true });
  const send = <C extends Call>(method: string, call: C, value: Req<C>, callOpts?: CallOptions) =>
    exchange.request<Res<C>>(method, call, (envelope) => ({ ...envelope, call: { case: call, value } }), callOpts?.timeoutMs);
  return {
    leaseOwner: lease.owner,
    authorize(req: Req<'authorize'>, callOpts?: CallOptions) {
      lease.keep((owner) => client.renewLease({ owner }), { intervalMs: opts.leaseRenewMs });
      return send('Authorize', 'authorize', { ...req, leaseOwner: lease.owner }, callOpts);
    },
    settle: (req: Req<'settle'>, callOpts?: CallOptions) => send('Settle', 'settle', req, callOpts),
    release: (req: Req<'release'>, callOpts?: CallOptions) => send('Release', 'release', req, callOpts),
    close() {
      lease.stop();
      exchange.close();
      client.close();
    },
  };
}
