import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** How often an owner renews its lease; billing's lease (HOLD_LEASE_MS, 60 s) outlasts three renewals. */
export const LEASE_RENEW_MS = 20_000;

/**
 * A process's lease on the holds it makes: every hold it authorizes names `owner`, and while the
 * process lives it renews the lease (billing's RenewLease), one call for all its holds. When the
 * process dies the renewals stop, and billing releases its open holds once the lease lapses
 * (within about two minutes) instead of after the holds' maximum age (30 minutes).
 */
export class HoldLease {
  readonly owner: string;
  #timer: NodeJS.Timeout | undefined;

  constructor(owner = `${hostname()}/${process.pid}/${randomUUID()}`) {
    this.owner = owner;
  }

  /**
   * Starts renewing every `intervalMs` (and once now); later calls change nothing. A failed renewal
   * is retried at the next tick (`onError` hears of it): billing judges leases only while it has
   * been up for a whole lease, so its own absence does not cost an owner its holds.
   */
  keep(renew: (owner: string) => Promise<unknown>, opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): void {
    if (this.#timer) return;
    const tick = () => void renew(this.owner).catch((err: unknown) => opts.onError?.(err));
    this.#timer = setInterval(tick, opts.intervalMs ?? LEASE_RENEW_MS);
    this.#timer.unref();
    tick();
  }

  /** Stops renewing: the process is leaving (its holds are settled or released by then, or orphans). */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
