import { billingV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '@gw/service-kit';
import type { Counter, Meter } from '@opentelemetry/api';
import { MoneyBatcher, applyBatchNow, toGatewayError, type MoneyResult, type WindowReset } from './money.ts';
import { creditsFor, type BillingUnit } from './pricing.ts';
import type { RateDefaults } from './rate-limit.ts';

const UNITS: Record<number, BillingUnit> = {
  [billingV1.BillingUnit.MILLION_TOKENS]: 'million_tokens',
  [billingV1.BillingUnit.IMAGE]: 'image',
  [billingV1.BillingUnit.SECOND]: 'second',
};

function unitOf(u: billingV1.BillingUnit): BillingUnit {
  const unit = UNITS[u];
  if (!unit) throw new GatewayError('invalid_request', 'A billing unit is required.');
  return unit;
}

function need(value: string, name: string): void {
  if (value === '') throw new GatewayError('invalid_request', `${name} is required.`);
}

function ok(r: MoneyResult): MoneyResult {
  if (!r.ok) throw toGatewayError(r);
  return r;
}

/**
 * The request lifecycle in credits: authorize (hold the worst case), then settle (charge the
 * actual cost) or release (charge nothing), and refund a settled charge. Each call goes through
 * the batcher into `apply_groups`, so it is one transaction and idempotent by request id.
 */
export class RequestMoney {
  readonly #batcher: MoneyBatcher;
  readonly #orm: MikroORM;
  readonly #charged: Counter | undefined;

  readonly #now: () => Date;
  readonly #rateDefaults: RateDefaults;

  constructor(orm: MikroORM, opts: { now?: () => Date; meter?: Meter; rateDefaults?: RateDefaults; logger?: Logger } = {}) {
    const now = opts.now ?? (() => new Date());
    this.#now = now;
    this.#orm = orm;
    this.#rateDefaults = opts.rateDefaults ?? { perSecond: 50, perMinute: 1_500 };
    this.#charged = opts.meter?.createCounter('billing.credits.charged', { unit: '{credit}', description: 'Credits charged by settled requests' });
    // A batch that fails as a whole costs a statement per account and usually means a wallet
    // locked elsewhere for over 200 ms: worth a line and a count, though no money is at stake.
    const splits = opts.meter?.createCounter('billing.batches.split', { description: 'Money batches that failed as a whole and went on account by account' });
    const onSplit = (err: unknown, accounts: number) => {
      splits?.add(1);
      opts.logger?.warn({ err, accounts }, 'a money batch failed as a whole; its accounts go on one by one');
    };
    this.#batcher = new MoneyBatcher((groups, bounded) => applyBatchNow(orm, groups, now(), bounded), { onSplit });
  }

  async authorize(req: billingV1.AuthorizeRequest): Promise<{ held: bigint; balanceAfter: bigint }> {
    need(req.requestId, 'request_id');
    need(req.accountId, 'account_id');
    if (req.worstUnits < 0n || req.pricePerUnit < 0n) throw new GatewayError('invalid_request', 'Units and price must be non-negative.');
    const unit = unitOf(req.unit);
    const amount = creditsFor(unit, req.worstUnits, req.pricePerUnit);
    const r = await this.#batcher.submit(req.accountId, {
      op: 'authorize',
      request_id: req.requestId,
      key_id: req.keyId === '' ? null : req.keyId,
      amount: amount.toString(),
      worst_tokens: unit === 'million_tokens' ? req.worstUnits.toString() : '0',
      text: req.text,
      endpoint: req.endpoint,
      model: req.model,
      unit,
      price: req.pricePerUnit.toString(),
      ...(req.leaseOwner === '' ? {} : { lease_owner: req.leaseOwner.slice(0, 200) }),
      // The client's own id is a note beside ours, written with the hold (a replay keeps the first).
      ...(req.clientRequestId === '' ? {} : { client_request_id: req.clientRequestId.slice(0, 128) }),
      ...(req.checkRateLimit
        ? { rate_now_ms: this.#now().getTime(), rate_per_second: this.#rateDefaults.perSecond, rate_per_minute: this.#rateDefaults.perMinute }
        : {}),
    });
    if (!r.ok && r.code === 'insufficient_balance') throw await this.#insufficient(req.accountId, amount, req.text);
    if (!r.ok && r.code === 'api_key_limit_exceeded') throw toGatewayError(r, await this.#windowReset(req.accountId, r.period ?? ''));
    ok(r);
    return { held: BigInt(r.held ?? amount), balanceAfter: BigInt(r.balance_after!) };
  }

  /**
   * When a daily or monthly key window begins again: the next midnight, or first of the month, in
   * the account's zone (the windows' calendar, DECISIONS.md). Read only when a limit refuses.
   */
  async #windowReset(accountId: string, period: string): Promise<WindowReset | undefined> {
    if (period !== 'daily' && period !== 'monthly') return undefined;
    const now = this.#now();
    const unit = period === 'daily' ? 'day' : 'month';
    const rows = await this.#orm.em.fork().execute<{ at: Date; time_zone: string }[]>(
      `select (date_trunc('${unit}', ?::timestamptz at time zone time_zone) + interval '1 ${unit}') at time zone time_zone as at, time_zone
         from account where id = ?`,
      [now.toISOString(), accountId],
    );
    const row = rows[0];
    return row ? { at: new Date(row.at), timeZone: row.time_zone, now } : undefined;
  }

  /** A 402 that says what the request needed, what the wallet has, and what to do. */
  async #insufficient(accountId: string, needed: bigint, text: boolean): Promise<GatewayError> {
    const rows = await this.#orm.em.fork().execute<{ balance: string }[]>('select "balance"::text as balance from "wallet" where "account_id" = ?', [accountId]);
    const balance = rows[0]?.balance ?? '0';
    return new GatewayError('insufficient_balance', insufficientMessage(needed, BigInt(balance), text));
  }

  /**
   * Charges the usage at the price and unit stored with the hold (`apply_ops`): the caller says
   * what was used, never what it costs. Success without usage (`reconcile`) is charged the minimum
   * (DECISIONS.md) and marks the key.
   */
  async settle(req: billingV1.SettleRequest): Promise<{ creditCharged: bigint; balanceAfter: bigint }> {
    need(req.requestId, 'request_id');
    if (req.units < 0n || req.inputTokens < 0n || req.outputTokens < 0n) throw new GatewayError('invalid_request', 'Units and tokens must be non-negative.');
    const r = ok(
      await this.#batcher.submit(req.accountId, {
        op: 'settle',
        request_id: req.requestId,
        units: req.units.toString(),
        input_tokens: req.inputTokens.toString(),
        output_tokens: req.outputTokens.toString(),
        reconcile: req.reconcile,
      }),
    );
    // A replayed settle charged nothing new.
    if (!r.replay) this.#charged?.add(Number(r.credit_charged), { unit: r.unit });
    return { creditCharged: BigInt(r.credit_charged!), balanceAfter: BigInt(r.balance_after!) };
  }

  async release(req: billingV1.ReleaseRequest): Promise<{ balanceAfter: bigint }> {
    need(req.requestId, 'request_id');
    const r = ok(await this.#batcher.submit(req.accountId, { op: 'release', request_id: req.requestId }));
    return { balanceAfter: BigInt(r.balance_after!) };
  }

  async refund(req: billingV1.RefundRequest): Promise<{ creditRefunded: bigint; balanceAfter: bigint }> {
    need(req.requestId, 'request_id');
    const r = ok(await this.#batcher.submit(req.accountId, { op: 'refund', request_id: req.requestId }));
    return { creditRefunded: BigInt(r.credit_refunded!), balanceAfter: BigInt(r.balance_after!) };
  }
}

/**
 * The words of a 402: the hold this request needs (its worst-case cost), the balance available
 * (credits held for requests in flight are already taken out of it), and for text that the hold
 * comes from `max_tokens`, so a smaller one may fit.
 */
export function insufficientMessage(needed: bigint, balance: bigint, text: boolean): string {
  const head = `This request needs ${needed} credits held until it completes, and the balance available is ${balance} credits.`;
  const hint = text
    ? ' The hold is the worst case, priced from max_tokens (or the model\'s largest output when max_tokens is not set): send a smaller max_tokens, or top up the wallet.'
    : ' Top up the wallet, or ask for fewer images or seconds.';
  return head + hint;
}
