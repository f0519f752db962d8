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
 * `upstream_timeout`. The caller's abort reaches the call through a listener that `dispose` takes
 * off, not `AbortSignal.any`: Node's composite signals follow their sources through weak
 * references, which cost the text service about 2% of its CPU (one per provider call).
 */
export class CallSignal {
  readonly signal: AbortSignal;
  readonly #caller: AbortSignal | undefined;
  readonly #controller = new AbortController();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #onCallerAbort: (() => void) | undefined;
  #expired: string | undefined;

  constructor(caller?: AbortSignal) {
    this.#caller = caller;
    this.signal = this.#controller.signal;
    if (caller?.aborted === true) this.#controller.abort(caller.reason);
    else if (caller !== undefined) {
      this.#onCallerAbort = () => this.#controller.abort(caller.reason);
      caller.addEventListener('abort', this.#onCallerAbort, { once: true });
    }
  }

  /** Arms a deadline `ms` from now; the returned function disarms it. */
  arm(ms: number, label: string): () => void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#expired ??= label;
      this.#controller.abort(new DeadlineExceeded(label));
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

  /** Clears every pending deadline and stops following the caller (the call is over). */
  dispose(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    if (this.#onCallerAbort !== undefined) this.#caller?.removeEventListener('abort', this.#onCallerAbort);
  }
}
