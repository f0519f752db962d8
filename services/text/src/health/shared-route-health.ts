import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { eventsV1, textV1 } from '@gw/contracts';
import { closedStatus, isProviderError, routeKey, type RouteHealthBoard, type RouteRef, type RouteStatus, type Verdict } from '@gw/providers';
import { ensureStreamFor, qualify, subscribeBroadcast, type Logger, type NatsConnection, type ServiceContext } from '@gw/service-kit';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';

type Meter = ServiceContext['meter'];
import { decodeEvidence, decodeStatus, encodeEvidence, encodeStatus, healthView, kvKey, routeOfKey, stateToProto } from './route-status-codec.ts';

/** Core NATS only (outside every stream's subjects): replicas' evidence, about once a second. */
export const EVIDENCE_SUBJECT = 'text-health.evidence.report';
export const ROUTE_OPENED_SUBJECT = 'text.route.opened';
export const ROUTE_CLOSED_SUBJECT = 'text.route.closed';

/** The KV bucket of route states, one per events namespace. */
export function bucketName(namespace: string): string {
  return `${namespace.replace(/[^A-Za-z0-9_-]/g, '_')}${namespace === '' ? '' : '_'}text_route_health`;
}

/** Checks a route's health by calling it as the gateway itself: throws when the provider fails. */
export type Probe = (route: RouteRef, timeoutMs: number) => Promise<void>;

export interface SharedRouteHealthOptions {
  board: RouteHealthBoard;
  probe: Probe;
  logger: Logger;
  namespace: string;
  meter?: Meter;
  /** This replica's name in probe leases and evidence reports. */
  replica?: string;
  now?: () => number;
  /** How often due probes are looked for, and evidence reported. */
  tickMs?: number;
}

/**
 * The deployment's route health, as one text replica takes part in it. Route states live in a
 * NATS KV bucket (one entry per route, changed only by compare-and-set, so replicas that judge
 * the same evidence at once write one transition); each replica watches the bucket into its
 * `RouteHealthBoard`, which the router reads without a round trip. Evidence is pooled: each
 * replica reports its requests to the others every tick. Open routes are probed by one replica
 * at a time (a lease in the entry), with the gateway's own 1-token call; a success closes the
 * route at once. Opening and closing are published as events (`text.route.opened|closed`).
 * While NATS is away a replica keeps judging alone, in memory, and rejoins when it returns.
 */
export class SharedRouteHealth {
  readonly board: RouteHealthBoard;
  readonly replica: string;
  readonly #probe: Probe;
  readonly #logger: Logger;
  readonly #namespace: string;
  readonly #now: () => number;
  readonly #tickMs: number;
  readonly #busy = new Set<string>();
  readonly #transitions: ReturnType<Meter['createCounter']> | undefined;
  #kv: KV | undefined;
  #nc: NatsConnection | undefined;
  #timer: NodeJS.Timeout | undefined;
  #probes = new Set<Promise<void>>();
  /** The routes live models use (`retainOnly`); undefined until known, and then every route counts. */
  #live: Set<string> | undefined;
  #liveRoutes: readonly RouteRef[] = [];

  constructor(opts: SharedRouteHealthOptions) {
    this.board = opts.board;
    this.replica = opts.replica ?? randomUUID();
    this.#probe = opts.probe;
    this.#logger = opts.logger;
    this.#namespace = opts.namespace;
    this.#now = opts.now ?? Date.now;
    this.#tickMs = opts.tickMs ?? 250;
    this.board.onVerdict = (route, verdict) => this.#onVerdict(route, verdict);
    this.#transitions = opts.meter?.createCounter('gateway.route.transitions', { description: 'Text route breaker transitions (to: open, half_open, closed)' });
    if (opts.meter) this.#observe(opts.meter);
  }

  /** Starts the probe loop (also without NATS). */
  run(): void {
    let ticks = 0;
    this.#timer ??= setInterval(() => {
      this.#probeDue();
      // Evidence leaves once a second: enough for windows of tens of seconds.
      if (++ticks % Math.max(1, Math.round(1000 / this.#tickMs)) === 0) this.#report();
    }, this.#tickMs);
    this.#timer.unref();
  }

  /** Joins the deployment: the KV bucket, its watch, the evidence of the other replicas. */
  async attach(nc: NatsConnection): Promise<() => Promise<void>> {
    const kv = await new Kvm(nc).create(bucketName(this.#namespace), { history: 1 });
    await ensureStreamFor(nc, this.#namespace, ROUTE_OPENED_SUBJECT);
    const watch = await kv.watch();
    void (async () => {
      for await (const entry of watch) {
        if (entry.operation !== 'PUT') {
          // Another replica forgot a route no live model uses.
          const route = routeOfKey(entry.key);
          if (route) this.board.forget(route);
          continue;
        }
        const status = decodeStatus(entry.value);
        if (status) this.board.apply(status);
      }
    })().catch((err: unknown) => this.#logger.warn({ err }, 'route health watch ended'));
    const sub = subscribeBroadcast(
      nc,
      this.#namespace,
      EVIDENCE_SUBJECT,
      (data) => {
        const { replica, samples } = decodeEvidence(data);
        if (replica === this.replica) return;
        for (const sample of samples) this.board.merge(sample);
      },
      this.#logger,
    );
    this.#kv = kv;
    this.#nc = nc;
    // The routes forgotten while away from the bucket leave it too.
    if (this.#live) void this.retainOnly(this.#liveRoutes);
    return async () => {
      this.#kv = undefined;
      this.#nc = undefined;
      sub.unsubscribe();
      watch.stop();
    };
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.allSettled(this.#probes);
  }

  /**
   * The routes live models use, as the catalog says. Every other route is forgotten: no more
   * probes, no state or evidence here or in the shared bucket (a deleted model's open route would
   * otherwise be probed forever). A forgotten route that is used again starts closed.
   */
  async retainOnly(routes: readonly RouteRef[]): Promise<void> {
    this.#live = new Set(routes.map(routeKey));
    this.#liveRoutes = routes;
    const kv = this.#kv;
    const known = new Map(this.board.routes().map((route) => [routeKey(route), route]));
    try {
      // Entries this replica has not read yet (it has just joined) are the bucket's too.
      for await (const key of kv ? await kv.keys() : []) {
        const route = routeOfKey(key);
        if (route) known.set(routeKey(route), route);
      }
    } catch (err) {
      this.#logger.warn({ err }, 'route health entries not listed');
    }
    for (const route of known.values()) {
      if (this.#isLive(route)) continue;
      const state = this.board.status(route).state;
      this.board.forget(route);
      if (state !== 'closed') this.#logger.info({ provider: route.provider, upstreamModel: route.upstreamModel, state }, 'route forgotten: no live model uses it');
      try {
        await kv?.delete(kvKey(route));
      } catch (err) {
        this.#logger.warn({ err, provider: route.provider, upstreamModel: route.upstreamModel }, 'route health entry not deleted');
      }
    }
  }

  #isLive(route: RouteRef): boolean {
    return this.#live === undefined || this.#live.has(routeKey(route));
  }

  /** Every known route: its shared state and this replica's pooled evidence. */
  list(): textV1.RouteHealth[] {
    const routes = this.board.routes().sort((a, b) => a.provider.localeCompare(b.provider) || a.upstreamModel.localeCompare(b.upstreamModel));
    const factors = this.board.weightFactors(routes);
    return routes.map((route, i) => healthView(this.board.status(route), this.board.stats(route), factors[i] ?? 1));
  }

  #report(): void {
    const samples = this.board.takePending();
    if (samples.length === 0 || !this.#nc) return;
    try {
      this.#nc.publish(qualify(this.#namespace, EVIDENCE_SUBJECT), encodeEvidence(this.replica, samples));
    } catch (err) {
      this.#logger.warn({ err }, 'route evidence report failed');
    }
  }

  #onVerdict(route: RouteRef, verdict: Verdict): void {
    // Evidence of a route no live model uses (a request routed by an older catalog) judges nothing.
    if (!this.#isLive(route)) return;
    const now = this.#now();
    if (verdict.kind === 'open') {
      this.#run(route, () =>
        this.#transition(route, (cur) =>
          cur.state !== 'closed'
            ? undefined
            : { ...cur, state: 'open', reason: verdict.reason, since: now, until: verdict.until, failedProbes: 0, probeOwner: '', probeLeaseUntil: 0, lastError: verdict.lastError, lastErrorAt: now },
        ).then(() => undefined),
      );
      return;
    }
    // Failures of too few accounts: the gateway's own request decides whether the provider fails.
    const status = this.board.status(route);
    if (status.probeLeaseUntil > now) return;
    this.#run(route, async () => {
      const claimed = await this.#transition(route, (cur) =>
        cur.state === 'closed' && cur.probeLeaseUntil <= now ? { ...cur, probeOwner: this.replica, probeLeaseUntil: now + this.board.policy.probeTimeoutMs } : undefined,
      );
      if (!claimed) return;
      const failure = await this.#tryProbe(route);
      const after = this.#now();
      await this.#transition(route, (cur) => {
        if (cur.state !== 'closed' || cur.probeOwner !== this.replica) return undefined;
        if (failure === undefined) {
          // Those failures were the requests' own: no other probe for a while.
          return { ...cur, probeOwner: '', probeLeaseUntil: after + this.board.policy.suspectProbeIntervalMs };
        }
        // The provider fails the gateway's own request too; a Retry-After on it rests the route that long.
        const rest = failure.retryAfterMs === undefined ? undefined : this.board.restUntil(failure.retryAfterMs);
        return {
          ...cur,
          state: 'open',
          reason: rest === undefined ? 'probe_failed' : 'retry_after',
          since: after,
          until: rest ?? after + this.board.policy.probeIntervalMs,
          failedProbes: rest === undefined ? 1 : 0,
          probeOwner: '',
          probeLeaseUntil: 0,
          lastError: failure.message,
          lastErrorAt: after,
        };
      });
    });
  }

  /** Open routes whose next probe is due (or whose prober went quiet): claim, probe, close or rest longer. */
  #probeDue(): void {
    const now = this.#now();
    const due = (s: RouteStatus) => (s.state === 'open' && s.until <= now && s.probeLeaseUntil <= now) || (s.state === 'half_open' && s.probeLeaseUntil <= now);
    for (const route of this.board.routes()) {
      if (!due(this.board.status(route)) || !this.#isLive(route)) continue;
      this.#run(route, async () => {
        const claimed = await this.#transition(route, (cur) =>
          due(cur) ? { ...cur, state: 'half_open', probeOwner: this.replica, probeLeaseUntil: now + this.board.policy.probeTimeoutMs } : undefined,
        );
        if (!claimed) return;
        const failure = await this.#tryProbe(route);
        const after = this.#now();
        await this.#transition(route, (cur) => {
          if (cur.state !== 'half_open' || cur.probeOwner !== this.replica) return undefined;
          if (failure === undefined) return { ...closedStatus(route, after), lastError: cur.lastError, lastErrorAt: cur.lastErrorAt };
          const failedProbes = cur.failedProbes + 1;
          const wait = Math.min(this.board.policy.maxProbeIntervalMs, this.board.policy.probeIntervalMs * 2 ** (failedProbes - 1));
          // A Retry-After on the probe's answer is honoured too.
          const until = Math.max(after + wait, failure.retryAfterMs === undefined ? 0 : this.board.restUntil(failure.retryAfterMs));
          return { ...cur, state: 'open', until, failedProbes, probeOwner: '', probeLeaseUntil: 0, lastError: failure.message, lastErrorAt: after };
        });
      });
    }
  }

  /** The probe's failure (its message, and the provider's Retry-After), or undefined when the provider answered. */
  async #tryProbe(route: RouteRef): Promise<{ message: string; retryAfterMs?: number } | undefined> {
    try {
      await this.#probe(route, this.board.policy.probeTimeoutMs);
      return undefined;
    } catch (err) {
      if (isProviderError(err)) return { message: err.message, ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }) };
      return { message: err instanceof Error ? err.message : String(err) };
    }
  }

  /** One piece of work per route at a time on this replica. */
  #run(route: RouteRef, work: () => Promise<void>): void {
    const key = routeKey(route);
    if (this.#busy.has(key)) return;
    this.#busy.add(key);
    const done = work()
      .catch((err: unknown) => this.#logger.warn({ err, provider: route.provider, upstreamModel: route.upstreamModel }, 'route health transition failed'))
      .finally(() => {
        this.#busy.delete(key);
        this.#probes.delete(done);
      });
    this.#probes.add(done);
  }

  /**
   * Applies `next` to the route's current state with compare-and-set: whoever writes first wins,
   * the others re-read and usually find nothing left to do. Without NATS, applies it locally.
   */
  async #transition(route: RouteRef, next: (cur: RouteStatus) => RouteStatus | undefined): Promise<RouteStatus | undefined> {
    // Work begun before the route was forgotten does not bring it back.
    if (!this.#isLive(route)) return undefined;
    const key = kvKey(route);
    for (let attempt = 0; attempt < 5; attempt++) {
      const kv = this.#kv;
      let current = this.board.status(route);
      let revision: number | undefined;
      if (kv) {
        try {
          const entry = await kv.get(key);
          if (entry && entry.operation === 'PUT') {
            current = decodeStatus(entry.value) ?? current;
            revision = entry.revision;
          }
        } catch (err) {
          this.#logger.warn({ err }, 'route health store unreachable; judging alone');
          return this.#local(current, next);
        }
      }
      const updated = next(current);
      if (!updated) return undefined;
      if (!kv) return this.#local(current, () => updated);
      try {
        const written = revision === undefined ? await kv.create(key, encodeStatus(updated)) : await kv.update(key, encodeStatus(updated), revision);
        this.#changed(current, updated, `${key}:${written}`);
        return updated;
      } catch {
        // Another replica wrote first (or the store hiccupped): read again.
      }
    }
    return undefined;
  }

  #local(current: RouteStatus, next: (cur: RouteStatus) => RouteStatus | undefined): RouteStatus | undefined {
    const updated = next(current);
    if (updated) this.#changed(current, updated, `${routeKey(current)}:local:${this.#now()}`);
    return updated;
  }

  #changed(before: RouteStatus, after: RouteStatus, eventId: string): void {
    this.board.apply(after);
    if (before.state === after.state) return;
    this.#transitions?.add(1, { provider: after.provider, upstream_model: after.upstreamModel, to: after.state });
    const opened = before.state === 'closed';
    const closed = after.state === 'closed';
    if (!opened && !closed) return;
    this.#logger.info(
      { provider: after.provider, upstreamModel: after.upstreamModel, state: after.state, reason: after.reason, lastError: after.lastError },
      closed ? 'route closed: serving again' : 'route opened: resting',
    );
    const nc = this.#nc;
    if (!nc) return;
    const subject = qualify(this.#namespace, closed ? ROUTE_CLOSED_SUBJECT : ROUTE_OPENED_SUBJECT);
    const event = create(eventsV1.RouteHealthChangedSchema, {
      eventId,
      route: healthView(after, this.board.stats(after), 1),
      previousState: stateToProto(before.state),
    });
    jetstream(nc)
      .publish(subject, toBinary(eventsV1.RouteHealthChangedSchema, event), { msgID: eventId })
      .catch((err: unknown) => this.#logger.warn({ err, subject }, 'route event not published'));
  }

  /** Prometheus series: each route's state (0 closed, 1 open, 2 half-open), error rate and latency. */
  #observe(meter: Meter): void {
    const state = meter.createObservableGauge('gateway.route.state', { description: 'Text route breaker state: 0 closed, 1 open, 2 half-open' });
    const errorRate = meter.createObservableGauge('gateway.route.error_rate', { description: 'Failed share of a text route’s requests in the health window' });
    const p50 = meter.createObservableGauge('gateway.route.latency.p50', { unit: 'ms', description: 'Median latency to the answer or first event in the health window' });
    const p99 = meter.createObservableGauge('gateway.route.latency.p99', { unit: 'ms', description: '99th percentile latency in the health window' });
    const code = { closed: 0, open: 1, half_open: 2 } as const;
    meter.addBatchObservableCallback(
      (result) => {
        for (const route of this.board.routes()) {
          const attrs = { provider: route.provider, upstream_model: route.upstreamModel };
          const stats = this.board.stats(route);
          result.observe(state, code[this.board.status(route).state], attrs);
          result.observe(errorRate, stats.errorRate, attrs);
          result.observe(p50, stats.p50, attrs);
          result.observe(p99, stats.p99, attrs);
        }
      },
      [state, errorRate, p50, p99],
    );
  }
}
