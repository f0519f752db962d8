import { GatewayError, isErrorCode } from '@gw/errors';
import { runPrepared, type PreparedStatement } from '@gw/service-kit';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { BillingUnit } from './pricing.ts';
import { rateLimitError } from './rate-limit.ts';

/** One money operation on an account, as `apply_groups` takes it (bigints travel as strings). */
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
      /** The process that owns the hold and renews its lease; absent: no lease. */
      lease_owner?: string;
      /** The client's own `x-request-id`, kept beside ours; absent: none. */
      client_request_id?: string;
      /** Count the account rate limit first (the clock and the default limits). */
      rate_now_ms?: number;
      rate_per_second?: number;
      rate_per_minute?: number;
    }
  | {
      op: 'settle';
      request_id: string;
      /** Billable quantity in the hold's unit; priced at the hold's price. */
      units: string;
      input_tokens: string;
      output_tokens: string;
      reconcile: boolean;
    }
  | { op: 'release'; request_id: string }
  | { op: 'refund'; request_id: string };

/** What `apply_groups` answers for one op. */
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
  /** A settle's unit (the hold's). */
  unit?: BillingUnit;
}

const MESSAGES: Record<string, string> = {
  auth_revoked: 'The API key was revoked.',
  auth_expired: 'The API key has expired.',
  insufficient_balance: 'The wallet balance is not enough for this request.',
  api_key_limit_exceeded: 'This API key reached a limit its owner configured.',
  api_key_quota_reconciliation_required:
    'An earlier text request on this key is not reconciled. Contact support; retrying does not help.',
  not_found: 'No such request or account.',
  invalid_request: 'The operation does not match the request it refers to.',
};

/** When a key limit's window begins again: its instant and the zone whose calendar it follows. */
export interface WindowReset {
  at: Date;
  timeZone: string;
  now: Date;
}

/** `in 4 h 10 min`, `in 35 s`: how long until an instant, roughly, for a person. */
function waitFor(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.round(h / 24)} days`;
}

/** When a refused key's window resets, or that a lifetime limit never does. */
export function resetSentence(period: string, reset: WindowReset | undefined): string {
  if (period === 'lifetime') return ' A lifetime limit never resets: the key\'s owner can raise or remove it in the dashboard.';
  if (!reset) return ' Wait for the window to reset.';
  const local = new Intl.DateTimeFormat('en-CA', {
    timeZone: reset.timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
  }).format(reset.at).replace(',', '');
  const utc = reset.at.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return ` The ${period} window resets at ${local} ${reset.timeZone} (${utc}), in ${waitFor(reset.at.getTime() - reset.now.getTime())}.`;
}

/**
 * What a key limit counts, said where it refuses: spending counts each request's hold (its worst
 * case) until it settles, so the limit is never passed; tokens count the worst case of requests
 * still in progress, so concurrent requests pass it by at most one request (spec 7.2). Ends with
 * when the window resets.
 */
function keyLimitMessage(period: string, limitType: string, reset: WindowReset | undefined): string {
  const when = resetSentence(period, reset);
  switch (limitType) {
    case 'spending':
      return `This API key's ${period} spending limit has no room left for this request's worst-case cost (its hold); a smaller max_tokens makes a smaller hold.${when}`;
    case 'tokens':
      return `This API key reached its ${period} tokens limit, counting the worst case of its requests still in progress.${when}`;
    default:
      return `This API key reached its ${period} ${limitType} limit.${when}`;
  }
}

/** Turns a refused op into the public error it stands for; `reset`: when a refusing key window resets. */
export function toGatewayError(r: MoneyResult, reset?: WindowReset): GatewayError {
  const code = isErrorCode(r.code) ? r.code : 'invalid_request';
  if (code === 'rate_limit_exceeded') return rateLimitError(r.limit_type ?? 'per_second', r.retry_after_seconds ?? 1);
  const details = r.limit_type !== undefined ? { limit_type: r.limit_type, period: r.period } : {};
  const message = code === 'api_key_limit_exceeded' ? keyLimitMessage(r.period ?? '', r.limit_type ?? '', reset) : (MESSAGES[code] ?? 'The request was refused.');
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
const APPLY_BATCH: PreparedStatement = { name: 'apply_batch', text: 'select apply_batch($1::jsonb, $2::timestamptz) as r' };
/**
 * A batch of holds only commits without waiting for its WAL flush. That is safe for money: WAL is
 * flushed in order, so the settle, release or refund that follows a hold (each flushed before it
 * is acknowledged) makes the hold durable too. A database crash can lose only holds that nothing
 * durable came after: requests still in flight, whose settle then fails and charges nothing, as
 * if the hold had never been taken; balance and ledger stay equal. A client is never shown a
 * balance that is not durable. Saves one disk flush on every billed request's critical path.
 */
const HOLDS_ONLY = ", set_config('synchronous_commit', 'off', true)";
const APPLY_HOLDS: PreparedStatement = { name: 'apply_ops_holds', text: APPLY.text + HOLDS_ONLY };
const APPLY_BATCH_HOLDS: PreparedStatement = { name: 'apply_batch_holds', text: APPLY_BATCH.text + HOLDS_ONLY };

/** The operations of one account in a batch, in the order they came. */
export interface AccountOps {
  accountId: string;
  ops: MoneyOp[];
}

/**
 * Applies the operations of one or more accounts in one statement of its own (one transaction,
 * one commit): the request path. A prepared statement on the ORM's pool, because building it
 * through the ORM cost ~0.2 ms per call, more than Postgres takes to run it. Answers each
 * group's results, in the groups' order. `bounded`: its lock waits end after 200 ms (`apply_batch`),
 * else one account's statement waits as long as its wallet is locked.
 */
export async function applyBatchNow(orm: MikroORM, groups: AccountOps[], now: Date, bounded = true): Promise<MoneyResult[][]> {
  const holdsOnly = groups.every((g) => g.ops.every((o) => o.op === 'authorize'));
  if (!bounded) {
    if (groups.length !== 1) throw new Error('an unbounded statement takes one account');
    const [{ accountId, ops }] = groups as [AccountOps];
    const rows = await runPrepared<{ r: MoneyResult[] }>(orm, holdsOnly ? APPLY_HOLDS : APPLY, [accountId, JSON.stringify(ops), now.toISOString()]);
    return [checked(rows[0]?.r, ops)];
  }
  const payload = JSON.stringify(groups.map((g) => ({ account: g.accountId, ops: g.ops })));
  const rows = await runPrepared<{ r: Record<string, MoneyResult[]> }>(orm, holdsOnly ? APPLY_BATCH_HOLDS : APPLY_BATCH, [payload, now.toISOString()]);
  return groups.map((g, i) => checked(rows[0]?.r[String(i + 1)], g.ops));
}

interface Pending {
  op: MoneyOp;
  resolve: (r: MoneyResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces concurrent money operations into few transactions. Operations that come while
 * batches are being applied queue up; a free lane takes what is queued (up to `maxOps`) and
 * applies it in one statement: one commit for many requests of many accounts, where a commit
 * each cost Postgres three times the CPU per request. An account is in at most one lane at a
 * time, so its operations apply in the order they came and our own batches never wait on each
 * other's wallet locks; different accounts still run in parallel lanes. A lone operation is
 * applied at once, so it waits for nothing. If a batch of several accounts fails (its lock waits
 * are bounded, so a wallet locked elsewhere fails it fast), each account is tried on its own, so
 * one account's failure or wait is not another's.
 */
export class MoneyBatcher {
  /** Accounts not in a lane that have operations queued, in the order they first came. */
  readonly #ready = new Map<string, Pending[]>();
  /** Operations of accounts in a lane, queued until that lane is done. */
  readonly #behind = new Map<string, Pending[]>();
  readonly #inLane = new Set<string>();
  readonly #apply: (groups: AccountOps[], bounded: boolean) => Promise<MoneyResult[][]>;
  readonly #maxLanes: number;
  readonly #maxOps: number;
  readonly #onSplit: ((err: unknown, accounts: number) => void) | undefined;
  #lanes = 0;

  /** `onSplit`: told when a batch failed as a whole and its accounts go on one by one. */
  constructor(
    apply: (groups: AccountOps[], bounded: boolean) => Promise<MoneyResult[][]>,
    opts: { lanes?: number; maxOps?: number; onSplit?: (err: unknown, accounts: number) => void } = {},
  ) {
    this.#apply = apply;
    this.#maxLanes = opts.lanes ?? 2;
    this.#maxOps = opts.maxOps ?? 200;
    this.#onSplit = opts.onSplit;
  }

  submit(accountId: string, op: MoneyOp): Promise<MoneyResult> {
    return new Promise((resolve, reject) => {
      const queues = this.#inLane.has(accountId) ? this.#behind : this.#ready;
      const queue = queues.get(accountId);
      if (queue) queue.push({ op, resolve, reject });
      else queues.set(accountId, [{ op, resolve, reject }]);
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#lanes < this.#maxLanes && this.#ready.size > 0) {
      const batch: Array<{ accountId: string; pending: Pending[] }> = [];
      let size = 0;
      for (const [accountId, queue] of this.#ready) {
        const pending = queue.splice(0, this.#maxOps - size);
        this.#ready.delete(accountId);
        if (queue.length > 0) this.#behind.set(accountId, queue);
        this.#inLane.add(accountId);
        batch.push({ accountId, pending });
        size += pending.length;
        if (size >= this.#maxOps) break;
      }
      this.#lanes++;
      void this.#run(batch);
    }
  }

  async #run(batch: Array<{ accountId: string; pending: Pending[] }>): Promise<void> {
    let apart = false;
    try {
      await this.#settle(batch, true).catch((whole: unknown) => {
        // Failed as a whole (a lock wait timed out, say): nothing of it committed, or if the
        // answer was lost after the commit, a replay changes nothing (every op is idempotent by
        // request id). Each account goes on its own, outside the lanes and without a bound on
        // its wait, and is free again as soon as its own statement is done: a wallet locked
        // elsewhere delays only its own account.
        apart = true;
        this.#onSplit?.(whole, batch.length);
        for (const group of batch) {
          void this.#settle([group], false)
            .catch((err: unknown) => group.pending.forEach((p) => p.reject(err)))
            .finally(() => this.#release([group]));
        }
      });
    } finally {
      this.#lanes--;
      if (apart) this.#pump();
      else this.#release(batch);
    }
  }

  /** The accounts of a finished batch take their queued operations back to the ready queue. */
  #release(groups: Array<{ accountId: string }>): void {
    for (const { accountId } of groups) {
      this.#inLane.delete(accountId);
      const queue = this.#behind.get(accountId);
      if (queue) {
        this.#behind.delete(accountId);
        this.#ready.set(accountId, queue);
      }
    }
    this.#pump();
  }

  async #settle(batch: Array<{ accountId: string; pending: Pending[] }>, bounded: boolean): Promise<void> {
    const results = await this.#apply(
      batch.map((g) => ({ accountId: g.accountId, ops: g.pending.map((p) => p.op) })),
      bounded,
    );
    batch.forEach((g, i) => g.pending.forEach((p, j) => p.resolve(results[i]![j]!)));
  }
}
