import { GatewayError } from '@gw/errors';
import { ProviderError } from './errors.ts';

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
  /** Consecutive retryable failures after which a route cools down. Default 3. */
  failureThreshold?: number;
  /** How long a cooled-down route is skipped. Default 30 s. */
  coolDownMs?: number;
  /** Clock in ms (injected by tests). */
  now?: () => number;
  /** Uniform [0, 1) (injected by tests). */
  random?: () => number;
}

interface RouteHealth {
  failures: number;
  coolUntil: number;
}

/** Weighted random order without replacement: each pick is proportional to the remaining weights. */
function weightedShuffle<R extends Route>(routes: readonly R[], random: () => number): R[] {
  const pool = [...routes];
  const out: R[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((sum, route) => sum + Math.max(0, route.weight), 0);
    if (total <= 0) return [...out, ...pool];
    let point = random() * total;
    let index = pool.findIndex((route) => (point -= Math.max(0, route.weight)) < 0);
    // Rounding can leave `point` a hair above zero at the end: take the last weighted route.
    if (index === -1) index = pool.findLastIndex((route) => route.weight > 0);
    out.push(...pool.splice(index, 1));
  }
  return out;
}

/** Lowest priority first; weighted random among equal priorities. */
export function orderRoutes<R extends Route>(routes: readonly R[], random: () => number = Math.random): R[] {
  const priorities = [...new Set(routes.map((route) => route.priority))].sort((a, b) => a - b);
  return priorities.flatMap((priority) =>
    weightedShuffle(
      routes.filter((route) => route.priority === priority),
      random,
    ),
  );
}

function routeKey(route: Route): string {
  return `${route.provider}\u0000${route.upstreamModel}`;
}

/**
 * Picks routes and falls back between them. A retryable failure (nothing reached the client, the
 * provider is at fault) moves on to the next route; a route failing `failureThreshold` times in a row
 * is skipped for `coolDownMs`, after which one more failure cools it again until a success resets it.
 */
export class FallbackRouter {
  readonly #threshold: number;
  readonly #coolDownMs: number;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #health = new Map<string, RouteHealth>();

  constructor(opts: RouterOptions = {}) {
    this.#threshold = opts.failureThreshold ?? 3;
    this.#coolDownMs = opts.coolDownMs ?? 30_000;
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
  }

  isCoolingDown(route: Route): boolean {
    const health = this.#health.get(routeKey(route));
    return health !== undefined && health.coolUntil > this.#now();
  }

  /** When the first of these routes, all cooling down, is back. */
  #coolsUntil(routes: readonly Route[]): number {
    return Math.min(...routes.map((route) => this.#health.get(routeKey(route))?.coolUntil ?? 0));
  }

  /** The routes to try, in order, without those cooling down. */
  order<R extends Route>(routes: readonly R[]): R[] {
    return orderRoutes(
      routes.filter((route) => !this.isCoolingDown(route)),
      this.#random,
    );
  }

  /** Why none of these routes can be tried now (none, or every one cooling down); undefined when one can. */
  unavailable(routes: readonly Route[]): GatewayError | undefined {
    if (routes.length === 0) return new GatewayError('model_temporarily_unavailable', 'No provider currently serves this model');
    if (routes.some((route) => !this.isCoolingDown(route))) return undefined;
    // The caller may stop offering the model until then (the gateway hides it from its listing).
    return new GatewayError('model_temporarily_unavailable', 'Every provider of this model is cooling down after repeated failures', {
      retry_after_seconds: Math.max(1, Math.ceil((this.#coolsUntil(routes) - this.#now()) / 1000)),
    });
  }

  /**
   * Runs `attempt` on the routes in order until one succeeds. Stops at once on a non-retryable
   * error (the request's own fault), on anything that is not a `ProviderError` (such as the
   * caller's abort) and when `signal` is aborted. When every route fails, the last error is thrown.
   * `countFailures: false` leaves route health alone on failure: for a caller trying the same work
   * again (a video job resubmitted), so that one piece of work failing over and over does not keep
   * a route cooling down for everyone.
   */
  async withFallback<R extends Route, T>(
    routes: readonly R[],
    attempt: (route: R) => Promise<T>,
    opts: { signal?: AbortSignal; countFailures?: boolean } = {},
  ): Promise<T> {
    const refusal = this.unavailable(routes);
    if (refusal) throw refusal;
    const ordered = this.order(routes);
    let lastError: unknown;
    for (const route of ordered) {
      opts.signal?.throwIfAborted();
      try {
        const result = await attempt(route);
        this.#health.delete(routeKey(route));
        return result;
      } catch (err) {
        if (!(err instanceof ProviderError) || !err.retryable || opts.signal?.aborted === true) throw err;
        if (opts.countFailures !== false) this.recordFailure(route);
        lastError = err;
      }
    }
    throw lastError;
  }

  /**
   * Counts a failure seen outside `withFallback` (e.g. a stream that broke after it was handed
   * over), so such a route cools down too.
   */
  recordFailure(route: Route): void {
    const key = routeKey(route);
    const health = this.#health.get(key) ?? { failures: 0, coolUntil: 0 };
    health.failures += 1;
    if (health.failures >= this.#threshold) health.coolUntil = this.#now() + this.#coolDownMs;
    this.#health.set(key, health);
  }
}
