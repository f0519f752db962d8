import type { MessageInitShape } from '@bufbuild/protobuf';
import { billingV1, createClient, ExchangeClient, INT64_MAX, INT64_MIN, type CallOptions, type ClientOptions } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { HoldLease } from '@gw/service-kit';

type Init<S extends Parameters<typeof createClient>[0]['methods'][number]['input']> = MessageInitShape<S>;

/** Billing's request lifecycle as the gateway calls it on every billed request. */
export interface MoneyCalls {
  authorize(req: Init<typeof billingV1.AuthorizeRequestSchema>, opts?: CallOptions): Promise<billingV1.AuthorizeResponse>;
  settle(req: Init<typeof billingV1.SettleRequestSchema>, opts?: CallOptions): Promise<billingV1.SettleResponse>;
  release(req: Init<typeof billingV1.ReleaseRequestSchema>, opts?: CallOptions): Promise<billingV1.ReleaseResponse>;
}

const SERVICE = billingV1.BillingService.typeName;

/**
 * `MoneyCalls` over billing's `Exchange` stream: the same calls, answers and errors as the unary
 * rpcs, a call and its reply each in a stream message (shared with the other calls of its
 * event-loop turn) instead of an rpc each. One exchange per caller process.
 * Every hold it authorizes is leased to this process (`leaseOwner`), and from the first one on the
 * lease is renewed every `leaseRenewMs` (20 s) until `close()`: if the process dies, billing
 * releases its holds within minutes.
 */
export function createMoneyExchange(
  address: string,
  opts: ClientOptions & { leaseRenewMs?: number } = {},
): MoneyCalls & { close(): void; readonly leaseOwner: string } {
  const client = createClient(billingV1.BillingService, address, opts);
  const lease = new HoldLease();
  const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), {
    service: SERVICE,
    resend: true,
    defaultTimeoutMs: opts.defaultTimeoutMs,
  });

  /** Sends one call and answers the response of its kind, or throws the error it carries. */
  function send(method: string, call: 'authorize' | 'settle' | 'release', value: unknown, callOpts?: CallOptions): Promise<unknown> {
    // A message that cannot be encoded would break the stream every billed request shares.
    const outOfRange = Object.entries(value as object).find(([, v]) => typeof v === 'bigint' && (v < INT64_MIN || v > INT64_MAX));
    if (outOfRange) return Promise.reject(new GatewayError('invalid_request', `${outOfRange[0]} is out of range.`));
    return exchange.request<unknown>(method, call, (envelope) => ({ ...envelope, call: { case: call, value } }), callOpts?.timeoutMs);
  }

  return {
    authorize: (req, callOpts) => {
      lease.keep((owner) => client.renewLease({ owner }), { intervalMs: opts.leaseRenewMs });
      return send('Authorize', 'authorize', { ...req, leaseOwner: req.leaseOwner || lease.owner }, callOpts) as Promise<billingV1.AuthorizeResponse>;
    },
    settle: (req, callOpts) => send('Settle', 'settle', req, callOpts) as Promise<billingV1.SettleResponse>,
    release: (req, callOpts) => send('Release', 'release', req, callOpts) as Promise<billingV1.ReleaseResponse>,
    leaseOwner: lease.owner,
    close() {
      lease.stop();
      exchange.close();
      client.close();
    },
  };
}
