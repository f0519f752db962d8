import { eventsV1, textV1 } from '@gw/contracts';

interface Resting {
  /** When the route's next probe (or the end of its Retry-After rest) is due (ms). */
  until: number;
}

function key(provider: string, upstreamModel: string): string {
  return `${provider}\u0000${upstreamModel}`;
}

/**
 * The text routes the deployment's route health has opened (docs/routing.md), as this gateway
 * replica knows them: loaded from the text service (`ListRouteHealth`) at start, on reconnect and
 * periodically, and kept current by the `text.route.opened|closed` events. Only the text service
 * judges health, on evidence across accounts and its own probes; this view only reads it, so that
 * a model whose every live route is open leaves the listing and is refused before a hold.
 */
export class RouteHealthView {
  #open = new Map<string, Resting>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  replace(routes: readonly textV1.RouteHealth[]): void {
    const open = new Map<string, Resting>();
    for (const r of routes) {
      if (r.state === textV1.RouteState.OPEN || r.state === textV1.RouteState.HALF_OPEN) open.set(key(r.provider, r.upstreamModel), { until: Number(r.untilUnixMs) });
    }
    this.#open = open;
  }

  apply(event: eventsV1.RouteHealthChanged): void {
    const r = event.route;
    if (!r) return;
    if (r.state === textV1.RouteState.CLOSED) this.#open.delete(key(r.provider, r.upstreamModel));
    else this.#open.set(key(r.provider, r.upstreamModel), { until: Number(r.untilUnixMs) });
  }

  /**
   * Seconds until the first of these routes may serve again when every one is open (at least 1);
   * 0 when one of them serves (or there are none: that is the catalog's to say).
   */
  restingFor(routes: ReadonlyArray<{ provider: string; upstreamModel: string }>): number {
    if (routes.length === 0 || this.#open.size === 0) return 0;
    let first = Infinity;
    for (const route of routes) {
      const resting = this.#open.get(key(route.provider, route.upstreamModel));
      if (!resting) return 0;
      first = Math.min(first, resting.until);
    }
    return Math.max(1, Math.ceil((first - this.#now()) / 1000));
  }
}
