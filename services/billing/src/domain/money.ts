import { GatewayError, isErrorCode } from '@gw/errors';
import { runPrepared, type PreparedStatement } from '@gw/service-kit';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { BillingUnit } from './pricing.ts';
import { rateLimitError } from './rate-limit.ts';

/** One money operation on an account, as `apply_ops` takes it (bigints travel as strings). */
export type MoneyOp =
  | {
      op: 'authorize';
      request_id: string;
      key_id: string | null;
      amount: string;
      worst_tokens: string;
      text: boolean;
      endpoint: string;
      model: string;
      unit: BillingUnit;
      price: string;
      /** Count the account rate limit first (the clock and the default limits). */
      rate_now_ms?: number;
      rate_per_second?: number;
      rate_per_minute?: number;
    }
  | {
      op: 'settle';
      request_id: string;
      unit: BillingUnit;
      price: string;
      charge: string;
      input_tokens: string;
      output_tokens: string;
      total_tokens: string;
      images: number;
      seconds: number;
      reconcile: boolean;
    }
  | { op: 'release'; request_id: string }
  | { op: 'refund'; request_id: string };

/** What `apply_ops` answers for one op. */
export interface MoneyResult {
  ok: boolean;
  code?: string;
  limit_type?: string;
  period?: string;
  retry_after_seconds?: number;
  held?: string;
  balance_after?: string;
  credit_charged?: string;
  credit_refunded?: string;
  replay?: boolean;
}

const MESSAGES: Record<string, string> = {
  insufficient_balance: 'The wallet balance is not enough for this request.',
  api_key_limit_exceeded: 'This API key reached a limit its owner configured.',
  api_key_quota_reconciliation_required:
    'An earlier text request on this key is not reconciled. Contact support; retrying does not help.',
  not_found: 'No such request or account.',
  invalid_request: 'The operation does not match the request it refers to.',
};

/**
 * What a key limit counts, said where it refuses: spending counts each request's hold (its worst
 * case) until it settles, so the limit is never passed; tokens count the worst case of requests
 * still in progress, so concurrent requests pass it by at most one request (spec 7.2).
 */
function keyLimitMessage(period: string, limitType: string): string {
  switch (limitType) {
    case 'spending':
      return `This API key's ${period} spending limit has no room left for this request's worst-case cost (its hold). A smaller max_tokens makes a smaller hold; otherwise wait for the window to reset.`;
    case 'tokens':
      return `This API key reached its ${period} tokens limit, counting the worst case of its requests still in progress. Wait for those to finish or for the window to reset.`;
    default:
      return `This API key reached its ${period} ${limitType} limit. Wait for the window to reset.`;
  }
}

/** Turns a refused op into the public error it stands for. */
export function toGatewayError(r: MoneyResult): GatewayError {
  const code = isErrorCode(r.code) ? r.code : 'invalid_request';
  if (code === 'rate_limit_exceeded') return rateLimitError(r.limit_type ?? 'per_second', r.retry_after_seconds ?? 1);
  const details = r.limit_type !== undefined ? { limit_type: r.limit_type, period: r.period } : {};
  const message = code === 'api_key_limit_exceeded' ? keyLimitMessage(r.period ?? '', r.limit_type ?? '') : (MESSAGES[code] ?? 'The request was refused.');
  return new GatewayError(code, message, details);
}

function checked(results: MoneyResult[] | undefined, ops: MoneyOp[]): MoneyResult[] {
  if (!Array.isArray(results) || results.length !== ops.length) throw new Error('apply_ops returned an unexpected result');
  return results;
}

/** Applies ops on one account in one statement, inside the caller's transaction (event handlers). */
export async function applyOps(em: EntityManager, accountId: string, ops: MoneyOp[], now: Date): Promise<MoneyResult[]> {
  const rows = await em.execute<{ r: MoneyResult[] }[]>('select apply_ops(?, ?::jsonb, ?::timestamptz) as r', [accountId, JSON.stringify(ops), now.toISOString()]);
  return checked(rows[0]?.r, ops);
}

const APPLY: PreparedStatement = { name: 'apply_ops', text: 'select apply_ops($1, $2::jsonb, $3::timestamptz) as r' };
/**
 * A batch of holds only commits without waiting for its WAL flush. That is safe for money: WAL is
 * flushed in order, so the settle, release or refund that follows a hold (each flushed before it
 * is acknowledged) makes the hold durable too. A database crash can lose only holds that nothing
 * durable came after: requests still in flight, whose settle then fails and charges nothing, as
 * if the hold had never been taken; balance and ledger stay equal. A client is never shown a
 * balance that is not durable. Saves one disk flush on every billed request's critical path.
 */
const APPLY_HOLDS: PreparedStatement = {
  name: 'apply_ops_holds',
  text: "select apply_ops($1, $2::jsonb, $3::timestamptz) as r, set_config('synchronous_commit', 'off', true)",
};

/**
 * Applies ops on one account in one statement of its own (one transaction, one wallet lock): the
 * request path. A prepared statement on the ORM's pool, because building it through the ORM cost
 * ~0.2 ms per call, more than Postgres takes to run it.
 */
export async function applyOpsNow(orm: MikroORM, accountId: string, ops: MoneyOp[], now: Date): Promise<MoneyResult[]> {
  const statement = ops.every((o) => o.op === 'authorize') ? APPLY_HOLDS : APPLY;
  const rows = await runPrepared<{ r: MoneyResult[] }>(orm, statement, [accountId, JSON.stringify(ops), now.toISOString()]);
  return checked(rows[0]?.r, ops);
}

interface Pending {
  op: MoneyOp;
  resolve: (r: MoneyResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces concurrent money operations per account. While one batch of an account is being
 * applied, new operations for it queue up and go together in the next batch: a hot account pays
 * one lock and one commit per batch instead of per request, and different accounts run in
 * parallel. A lone request is applied at once, so it waits for nothing.
 */
export class AccountBatcher {
  readonly #queues = new Map<string, Pending[]>();
  readonly #apply: (accountId: string, ops: MoneyOp[]) => Promise<MoneyResult[]>;
  readonly #maxBatch: number;

  constructor(apply: (accountId: string, ops: MoneyOp[]) => Promise<MoneyResult[]>, maxBatch = 200) {
    this.#apply = apply;
    this.#maxBatch = maxBatch;
  }

  submit(accountId: string, op: MoneyOp): Promise<MoneyResult> {
    return new Promise((resolve, reject) => {
      const queue = this.#queues.get(accountId);
      if (queue) {
        queue.push({ op, resolve, reject });
        return;
      }
      this.#queues.set(accountId, [{ op, resolve, reject }]);
      void this.#drain(accountId);
    });
  }

  async #drain(accountId: string): Promise<void> {
    const queue = this.#queues.get(accountId)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, this.#maxBatch);
      try {
        const results = await this.#apply(
          accountId,
          batch.map((p) => p.op),
        );
        batch.forEach((p, i) => p.resolve(results[i]!));
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    this.#queues.delete(accountId);
  }
}
