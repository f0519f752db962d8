import type { NatsConnection } from '@gw/service-kit';

export interface FeedWatchOptions {
  /** How often the connection is probed (a round trip to the NATS server). */
  probeMs?: number;
  /** A probe not answered within this marks the feed unhealthy. */
  timeoutMs?: number;
}

/**
 * Watches the connection that carries key revocations and reports whether it can be trusted:
 * unhealthy at once on a disconnect, and whenever a round trip to the server (`flush`, which
 * also confirms the subscriptions are in place) fails or takes longer than `timeoutMs`; healthy
 * again after a probe succeeds. A hung server is noticed within `probeMs + timeoutMs`. Answers a
 * function that stops watching.
 */
export function watchInvalidationFeed(nc: NatsConnection, onHealth: (healthy: boolean) => void, opts: FeedWatchOptions = {}): () => void {
  const probeMs = opts.probeMs ?? 500;
  const timeoutMs = opts.timeoutMs ?? 1_000;
  let stopped = false;
  let probing = false;
  const report = (healthy: boolean) => {
    if (!stopped) onHealth(healthy);
  };
  const probe = async () => {
    if (probing || stopped) return;
    probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      if (nc.isClosed()) return report(false);
      const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      report(await Promise.race([nc.flush().then(() => true, () => false), late]));
    } finally {
      clearTimeout(timer);
      probing = false;
    }
  };
  void (async () => {
    for await (const s of nc.status()) {
      if (stopped) break;
      if (s.type === 'disconnect' || s.type === 'close') report(false);
      else if (s.type === 'reconnect') void probe();
    }
    report(false); // the connection is closed for good
  })();
  const interval = setInterval(() => void probe(), probeMs);
  interval.unref();
  void probe();
  return () => {
    stopped = true;
    clearInterval(interval);
  };
}
