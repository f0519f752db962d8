/**
 * Bytes a process holds at once for requests in progress, in two budgets: one per owner (an
 * account), so a single client cannot take it all, and one for the whole process. A size bound
 * per request does not bound memory: a parsed request costs several times its body (the text, the
 * parsed JSON, the copy sent on), and six 30 MiB chat requests at once took both the gateway and
 * the text service past 850 MiB of memory, over their pods' limits.
 */
export class BytesBudget {
  readonly #totalBytes: number;
  readonly #perOwnerBytes: number;
  #used = 0;
  readonly #byOwner = new Map<string, number>();

  constructor(limits: { totalBytes: number; perOwnerBytes: number }) {
    this.#totalBytes = limits.totalBytes;
    this.#perOwnerBytes = Math.min(limits.perOwnerBytes, limits.totalBytes);
  }

  /** Bytes reserved now, in all and by one owner. */
  used(owner?: string): number {
    return owner === undefined ? this.#used : (this.#byOwner.get(owner) ?? 0);
  }

  /**
   * Reserves `bytes` for `owner`: answers the function that gives them back (safe to call more
   * than once), or which budget has no room. A request larger than a budget fits only when
   * nothing else is reserved in it, so no request is refused forever.
   */
  reserve(owner: string, bytes: number): { release: () => void } | { full: 'owner' | 'total' } {
    const ownerUsed = this.#byOwner.get(owner) ?? 0;
    if (ownerUsed > 0 && ownerUsed + bytes > this.#perOwnerBytes) return { full: 'owner' };
    if (this.#used > 0 && this.#used + bytes > this.#totalBytes) return { full: 'total' };
    this.#used += bytes;
    this.#byOwner.set(owner, ownerUsed + bytes);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#used -= bytes;
        const left = this.#byOwner.get(owner)! - bytes;
        if (left === 0) this.#byOwner.delete(owner);
        else this.#byOwner.set(owner, left);
      },
    };
  }
}
