import { GatewayError } from '@gw/errors';
import { ProviderError } from './errors.ts';
import { LocalRouteHealth, type RouteHealth } from './route-health.ts';

/** One live way to serve a model: a provider and the model id it knows it by. */
export interface Route {
  provider: string;
  upstreamModel: string;
  /** Lower is tried first. */
  priority: number;
  /** Share of traffic among routes of equal priority; 0 = only after the others. */
  weight: number;
}

export interface RouterOptions {
  /** The routes' health; without it, a `LocalRouteHealth` of this router's own. */
  health?: RouteHealth;
  /** For the local health: consecutive retryable failures after which a route cools down. Default 3. */
  failureThreshold?: number;
  /** For the local health: distinct accounts those failures must come from. Default 1. */
  minAccounts?: number;
  /** For the local health: how long a cooled-down route is skipped. Default 30 s. */
  coolDownMs?: number;
  /** Clock in ms (injected by tests). */
  now?: () => number;
  /** Uniform [0, 1) (injected by tests). */
  random?: () => number;
}

/** Weighted random order without replacement: each pick is proportional to the remaining weights. */
function weightedShuffle<R extends Route>(routes: readonly R[], random: () => number, weightOf: (route: R) => number = (route) => route.weight): R[] {
  const pool = routes.map((route) => ({ route, weight: Math.max(0, weightOf(route)) }));
  const out: R[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((sum, entry) => sum + entry.weight, 0);
    if (total <= 0) return [...out, ...pool.map((entry) => entry.route)];
    let point = random() * total;
    let index = pool.findIndex((entry) => (point -= entry.weight) < 0);
    // Rounding can leave `point` a hair above zero at the end: take the last weighted route.
    if (index === -1) index = pool.findLastIndex((entry) => entry.weight > 0);
    out.push(...pool.splice(index, 1).map((entry) => entry.route));
  }
  return out;
}

/**
 * Lowest priority first; weighted random among equal priorities. `factors` adjusts the configured
 * weights of a group of equal priority (route health's recent latency and errors).
 */
export function orderRoutes<R extends Route>(routes: readonly R[], random: () => number = Math.random, factors?: (group: readonly R[]) => number[]): R[] {
  const priorities = [...new Set(routes.map((route) => route.priority))].sort((a, b) => a - b);
  return priorities.flatMap((priority) => {
    const group = routes.filter((route) => route.priority === priority);
    if (!factors || group.length < 2) return weightedShuffle(group, random);
    const f = factors(group);
    const adjusted = new Map(group.map((route, i) => [route, route.weight * (f[i] ?? 1)]));
    return weightedShuffle(group, random, (route) => adjusted.get(route) ?? route.weight);
  });
}

/**
 * Picks routes and falls back between them. A retryable failure (nothing reached the client, the
 * provider is at fault) moves on to the next route. Which routes may be tried, and how their
 * weights are adjusted, is the route health's to say; every attempt's outcome is reported to it.
 */
export class FallbackRouter {
  readonly health: RouteHealth;
  readonly #now: () => number;
  readonly #random: () => number;

  constructor(opts: RouterOptions = {}) {
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.health =
      opts.health ??
      new LocalRouteHealth({
        now: this.#now,
        ...(opts.failureThreshold === undefined ? {} : { failureThreshold: opts.failureThreshold }),
        ...(opts.minAccounts === undefined ? {} : { minAccounts: opts.minAccounts }),
        ...(opts.coolDownMs === undefined ? {} : { coolDownMs: opts.coolDownMs }),
      });
  }

  isCoolingDown(route: Route): boolean {
    return !this.health.usable(route);
  }

  /** The routes to try, in order, without those the health rests. */
  order<R extends Route>(routes: readonly R[]): R[] {
    const factors = this.health.weightFactors?.bind(this.health);
    return orderRoutes(
      routes.filter((route) => this.health.usable(route)),
      this.#random,
      factors,
    );
  }

  /** Why none of these routes can be tried now (none, or every one resting); undefined when one can. */
  unavailable(routes: readonly Route[]): GatewayError | undefined {
    if (routes.length === 0) return new GatewayError('model_temporarily_unavailable', 'No provider currently serves this model');
    if (routes.some((route) => this.health.usable(route))) return undefined;
    // The caller may stop offering the model until then (the gateway hides it from its listing).
    return new GatewayError('model_temporarily_unavailable', 'Every provider of this model is resting after repeated failures', {
      retry_after_seconds: this.health.retryAfterSeconds(routes),
    });
  }

  /**
   * Runs `attempt` on the routes in order until one succeeds. Stops at once on a non-retryable
   * error (the request's own fault), on anything that is not a `ProviderError` (such as the
   * caller's abort) and when `signal` is aborted. When every route fails, the last error is thrown.
   * `account` is the caller's, so that health can tell one account's failures from a provider's.
   * `countFailures: false` leaves route health alone on failure: for a caller trying the same work
   * again (a video job resubmitted), so that one piece of work failing over and over does not keep
   * a route cooling down for everyone.
   */
  async withFallback<R extends Route, T>(
    routes: readonly R[],
    attempt: (route: R, place: { last: boolean }) => Promise<T>,
    opts: { signal?: AbortSignal; countFailures?: boolean; account?: string } = {},
  ): Promise<T> {
    const refusal = this.unavailable(routes);
    if (refusal) throw refusal;
    const ordered = this.order(routes);
    const account = opts.account ?? '';
    let lastError: unknown;
    for (const [i, route] of ordered.entries()) {
      opts.signal?.throwIfAborted();
      const started = this.#now();
      try {
        const result = await attempt(route, { last: i === ordered.length - 1 });
        this.health.record({ route, ok: true, account, latencyMs: this.#now() - started });
        return result;
      } catch (err) {
        if (!(err instanceof ProviderError) || !err.retryable || opts.signal?.aborted === true) throw err;
        if (opts.countFailures !== false) this.health.record({ route, ok: false, account, latencyMs: this.#now() - started, error: err });
        lastError = err;
      }
    }
    throw lastError;
  }

  /**
   * Counts a failure seen outside `withFallback` (e.g. a stream that broke after it was handed
   * over), so such a route's health knows of it too.
   */
  recordFailure(route: Route, account = '', error?: ProviderError): void {
    this.health.record({ route, ok: false, account, latencyMs: 0, ...(error ? { error } : {}) });
  }
}
