/** The abort reason our own deadlines use, so they are never mistaken for the caller's abort. */
export class DeadlineExceeded extends Error {
  constructor(label: string) {
    super(`deadline exceeded: ${label}`);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * One signal for a call: the caller's signal composed with our deadlines. It also answers "who
 * aborted?" afterwards, because a caller abort is passed on untouched while a deadline becomes an
 * `upstream_timeout`.
 */
export class CallSignal {
  readonly signal: AbortSignal;
  readonly #caller: AbortSignal | undefined;
  readonly #deadline = new AbortController();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #expired: string | undefined;

  constructor(caller?: AbortSignal) {
    this.#caller = caller;
    this.signal = caller === undefined ? this.#deadline.signal : AbortSignal.any([caller, this.#deadline.signal]);
  }

  /** Arms a deadline `ms` from now; the returned function disarms it. */
  arm(ms: number, label: string): () => void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#expired ??= label;
      this.#deadline.abort(new DeadlineExceeded(label));
    }, ms);
    // A pending deadline must not keep the process alive on its own.
    timer.unref();
    this.#timers.add(timer);
    return () => {
      clearTimeout(timer);
      this.#timers.delete(timer);
    };
  }

  get callerAborted(): boolean {
    return this.#caller?.aborted === true;
  }

  /** What the caller aborted with (a DOMException `AbortError` unless they gave a reason). */
  get callerReason(): unknown {
    return this.#caller?.reason;
  }

  /** Label of the first deadline that fired, if any. */
  get expired(): string | undefined {
    return this.#expired;
  }

  /** Clears every pending deadline (the call is over). */
  dispose(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}
