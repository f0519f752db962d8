import type { ProviderError } from './errors.ts';

/** A route as health knows it: a provider and the model id it knows it by. */
export interface RouteRef {
  provider: string;
  upstreamModel: string;
}

/** The key of a route in every map and store. */
export function routeKey(route: RouteRef): string {
  return `${route.provider}\u0000${route.upstreamModel}`;
}

/** One call's result on a route, as the router saw it. */
export interface AttemptOutcome {
  route: RouteRef;
  ok: boolean;
  /** The calling account ('' when unknown: all such calls count as one account). */
  account: string;
  /** Until the answer, or a stream's first event. */
  latencyMs: number;
  /** The failure (a retryable `ProviderError`) when `ok` is false. */
  error?: ProviderError;
}

/**
 * What the router asks of route health. `FallbackRouter` keeps a `LocalRouteHealth` of its own
 * when given none; the text service gives it the deployment's shared health.
 */
export interface RouteHealth {
  /** Client requests may be sent to the route now. */
  usable(route: RouteRef): boolean;
  /** Seconds until the first of these (all unusable) routes may serve again, at least 1. */
  retryAfterSeconds(routes: readonly RouteRef[]): number;
  record(outcome: AttemptOutcome): void;
  /** Factors for the configured weights of these routes (same priority), one per route. */
  weightFactors?(routes: readonly RouteRef[]): number[];
}

/**
 * The per-process rule, for the services whose routes have no shared health (media, video):
 * `failureThreshold` retryable failures in a row, from at least `minAccounts` distinct accounts,
 * rest a route for `coolDownMs`; a success resets. With `minAccounts` above 1, one account's
 * failures (a prompt the provider refuses) never rest a route for the others.
 */
export class LocalRouteHealth implements RouteHealth {
  readonly #threshold: number;
  readonly #minAccounts: number;
  readonly #coolDownMs: number;
  readonly #now: () => number;
  readonly #health = new Map<string, { failures: number; accounts: Set<string>; coolUntil: number }>();

  constructor(opts: { failureThreshold?: number; minAccounts?: number; coolDownMs?: number; now?: () => number } = {}) {
    this.#threshold = opts.failureThreshold ?? 3;
    this.#minAccounts = opts.minAccounts ?? 1;
    this.#coolDownMs = opts.coolDownMs ?? 30_000;
    this.#now = opts.now ?? Date.now;
  }

  usable(route: RouteRef): boolean {
    const health = this.#health.get(routeKey(route));
    return health === undefined || health.coolUntil <= this.#now();
  }

  retryAfterSeconds(routes: readonly RouteRef[]): number {
    const until = Math.min(...routes.map((route) => this.#health.get(routeKey(route))?.coolUntil ?? 0));
    return Math.max(1, Math.ceil((until - this.#now()) / 1000));
  }

  record(outcome: AttemptOutcome): void {
    const key = routeKey(outcome.route);
    if (outcome.ok) {
      this.#health.delete(key);
      return;
    }
    const health = this.#health.get(key) ?? { failures: 0, accounts: new Set<string>(), coolUntil: 0 };
    health.failures += 1;
    health.accounts.add(outcome.account);
    if (health.failures >= this.#threshold && health.accounts.size >= this.#minAccounts) health.coolUntil = this.#now() + this.#coolDownMs;
    this.#health.set(key, health);
  }
}

export type BreakerState = 'closed' | 'open' | 'half_open';
export type OpenReason = '' | 'errors' | 'probe_failed' | 'retry_after';

/** A route's shared state (one NATS KV entry in the text service). */
export interface RouteStatus extends RouteRef {
  state: BreakerState;
  reason: OpenReason;
  /** When it entered its state (ms). */
  since: number;
  /** Open: when the next probe is due (the end of a Retry-After rest). */
  until: number;
  /** Probes failed in a row while open (the next probe waits longer). */
  failedProbes: number;
  /** The replica running a probe, and until when it may (another takes over after). */
  probeOwner: string;
  probeLeaseUntil: number;
  lastError: string;
  lastErrorAt: number;
}

export function closedStatus(route: RouteRef, since = 0): RouteStatus {
  return {
    provider: route.provider,
    upstreamModel: route.upstreamModel,
    state: 'closed',
    reason: '',
    since,
    until: 0,
    failedProbes: 0,
    probeOwner: '',
    probeLeaseUntil: 0,
    lastError: '',
    lastErrorAt: 0,
  };
}

/** How health judges evidence. Defaults in `DEFAULT_HEALTH_POLICY`. */
export interface HealthPolicy {
  /** The evidence window. */
  windowMs: number;
  /** Failures in the window before anything is judged. */
  minFailures: number;
  /** Failed share of the window's requests that counts as failing (0..1). */
  errorRate: number;
  /** Distinct failing accounts needed to open a route on client evidence alone. */
  minAccounts: number;
  /** First probe after opening on errors; doubles per failed probe up to `maxProbeIntervalMs`. */
  probeIntervalMs: number;
  maxProbeIntervalMs: number;
  /** Failures of too few accounts are checked with a probe at most this often per route. */
  suspectProbeIntervalMs: number;
  /** Longest rest a Retry-After can impose. */
  maxRestMs: number;
  /** A probe's deadline and its lease: past it another replica may probe. */
  probeTimeoutMs: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = {
  windowMs: 30_000,
  minFailures: 5,
  errorRate: 0.5,
  minAccounts: 3,
  probeIntervalMs: 1_000,
  maxProbeIntervalMs: 5_000,
  suspectProbeIntervalMs: 10_000,
  maxRestMs: 300_000,
  probeTimeoutMs: 10_000,
};

/** Counts of a route's requests, as replicas report them to each other. */
export interface Sample extends RouteRef {
  ok: number;
  /** Failures per account. */
  failed: Map<string, number>;
  latencies: number[];
  lastError: string;
}

interface Bucket {
  at: number;
  ok: number;
  failed: Map<string, number>;
  latencies: number[];
  lastError: string;
  lastErrorAt: number;
}

const BUCKET_MS = 1_000;
/** How long weight factors are reused. */
const FACTORS_TTL_MS = 1_000;
/** Latencies kept per bucket (and per report): enough for a p99 of a busy route's window. */
const LATENCY_SAMPLES = 200;

function addLatencies(into: number[], from: readonly number[]): void {
  for (const ms of from) {
    if (into.length < LATENCY_SAMPLES) into.push(ms);
    else into[Math.floor(Math.random() * LATENCY_SAMPLES)] = ms;
  }
}

export interface WindowStats {
  requests: number;
  failed: number;
  errorRate: number;
  failingAccounts: number;
  p50: number;
  p99: number;
  lastError: string;
  lastErrorAt: number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
}

/** A route's requests over the last `windowMs`, in one-second buckets. */
class EvidenceWindow {
  #buckets: Bucket[] = [];

  add(now: number, sample: Omit<Sample, 'provider' | 'upstreamModel'>): void {
    const at = now - (now % BUCKET_MS);
    let bucket = this.#buckets.at(-1);
    if (bucket?.at !== at) {
      bucket = { at, ok: 0, failed: new Map(), latencies: [], lastError: '', lastErrorAt: 0 };
      this.#buckets.push(bucket);
    }
    bucket.ok += sample.ok;
    for (const [account, n] of sample.failed) bucket.failed.set(account, (bucket.failed.get(account) ?? 0) + n);
    addLatencies(bucket.latencies, sample.latencies);
    if (sample.lastError !== '') {
      bucket.lastError = sample.lastError;
      bucket.lastErrorAt = now;
    }
  }

  clear(): void {
    this.#buckets = [];
  }

  stats(now: number, windowMs: number, withLatency = true): WindowStats {
    const from = now - windowMs;
    while (this.#buckets.length > 0 && this.#buckets[0]!.at + BUCKET_MS <= from) this.#buckets.shift();
    let ok = 0;
    let failed = 0;
    const accounts = new Set<string>();
    const latencies: number[] = [];
    let lastError = '';
    let lastErrorAt = 0;
    for (const b of this.#buckets) {
      ok += b.ok;
      for (const [account, n] of b.failed) {
        failed += n;
        accounts.add(account);
      }
      if (withLatency) latencies.push(...b.latencies);
      if (b.lastErrorAt > 0) {
        lastError = b.lastError;
        lastErrorAt = b.lastErrorAt;
      }
    }
    latencies.sort((a, b) => a - b);
    const requests = ok + failed;
    return {
      requests,
      failed,
      errorRate: requests === 0 ? 0 : failed / requests,
      failingAccounts: accounts.size,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      lastError,
      lastErrorAt,
    };
  }
}

/** What the evidence says of a closed route after a failure. */
export type Verdict =
  /** Open now: enough accounts failed, or the provider asked for a rest. */
  | { kind: 'open'; reason: 'errors' | 'retry_after'; until: number; lastError: string }
  /** Failing, but on too few accounts to judge: a probe decides. */
  | { kind: 'suspect'; lastError: string };

/**
 * The health of routes as one replica knows it: the shared states (applied from the store) and
 * the evidence of the last `windowMs` (its own requests and, merged, the other replicas'
 * reports). It decides nothing on its own: a failure that tips the evidence is handed to
 * `onVerdict`, whose owner writes the transition to the shared store. Pure and clock-injected.
 */
export class RouteHealthBoard implements RouteHealth {
  readonly policy: HealthPolicy;
  readonly #now: () => number;
  readonly #states = new Map<string, RouteStatus>();
  readonly #windows = new Map<string, EvidenceWindow>();
  readonly #refs = new Map<string, RouteRef>();
  /** Weight factors per group of routes, with when they were computed. */
  readonly #factors = new Map<string, { at: number; factors: number[] }>();
  /** This replica's outcomes not yet reported to the others. */
  #pending = new Map<string, Sample>();
  onVerdict: (route: RouteRef, verdict: Verdict) => void = () => undefined;

  constructor(opts: { policy?: Partial<HealthPolicy>; now?: () => number } = {}) {
    this.policy = { ...DEFAULT_HEALTH_POLICY, ...opts.policy };
    this.#now = opts.now ?? Date.now;
  }

  status(route: RouteRef): RouteStatus {
    return this.#states.get(routeKey(route)) ?? closedStatus(route);
  }

  /** Every route with a state or evidence. */
  routes(): RouteRef[] {
    return [...this.#refs.values()];
  }

  usable(route: RouteRef): boolean {
    return this.status(route).state === 'closed';
  }

  retryAfterSeconds(routes: readonly RouteRef[]): number {
    const now = this.#now();
    const until = Math.min(...routes.map((route) => Math.max(this.status(route).until, now + 1)));
    return Math.max(1, Math.ceil((until - now) / 1000));
  }

  /** A state read from the shared store. A route that closes starts a new window: its old failures are done. */
  apply(status: RouteStatus): void {
    const key = routeKey(status);
    this.#refs.set(key, { provider: status.provider, upstreamModel: status.upstreamModel });
    const before = this.#states.get(key);
    if (status.state === 'closed' && before !== undefined && before.state !== 'closed') this.#windows.get(key)?.clear();
    this.#states.set(key, status);
  }

  /**
   * Drops everything known of a route (state, evidence, unreported outcomes): for a route no live
   * model uses any more. Should it be used again, it starts closed, without evidence.
   */
  forget(route: RouteRef): void {
    const key = routeKey(route);
    this.#states.delete(key);
    this.#windows.delete(key);
    this.#refs.delete(key);
    this.#pending.delete(key);
    this.#factors.clear();
  }

  #window(route: RouteRef): EvidenceWindow {
    const key = routeKey(route);
    let window = this.#windows.get(key);
    if (!window) {
      window = new EvidenceWindow();
      this.#windows.set(key, window);
      this.#refs.set(key, { provider: route.provider, upstreamModel: route.upstreamModel });
    }
    return window;
  }

  record(outcome: AttemptOutcome): void {
    const { route } = outcome;
    const failed = new Map<string, number>();
    if (!outcome.ok) failed.set(outcome.account, 1);
    const sample = { ok: outcome.ok ? 1 : 0, failed, latencies: outcome.ok ? [outcome.latencyMs] : [], lastError: outcome.error?.message ?? '' };
    this.#window(route).add(this.#now(), sample);
    const key = routeKey(route);
    const pending = this.#pending.get(key) ?? { provider: route.provider, upstreamModel: route.upstreamModel, ok: 0, failed: new Map(), latencies: [], lastError: '' };
    pending.ok += sample.ok;
    for (const [account, n] of failed) pending.failed.set(account, (pending.failed.get(account) ?? 0) + n);
    addLatencies(pending.latencies, sample.latencies);
    if (sample.lastError !== '') pending.lastError = sample.lastError;
    this.#pending.set(key, pending);
    if (!outcome.ok) this.#judge(route, outcome.error?.retryAfterMs);
  }

  /** Another replica's report. */
  merge(sample: Sample): void {
    this.#window(sample).add(this.#now(), sample);
    if (sample.failed.size > 0) this.#judge(sample, undefined);
  }

  /** This replica's outcomes since the last call, for the other replicas. */
  takePending(): Sample[] {
    const out = [...this.#pending.values()];
    this.#pending = new Map();
    return out;
  }

  stats(route: RouteRef): WindowStats {
    return this.#window(route).stats(this.#now(), this.policy.windowMs);
  }

  /** Counts only (no latency percentiles): what judging a failure needs. */
  #counts(route: RouteRef): WindowStats {
    return this.#window(route).stats(this.#now(), this.policy.windowMs, false);
  }

  #judge(route: RouteRef, retryAfterMs: number | undefined): void {
    if (this.status(route).state !== 'closed') return;
    const now = this.#now();
    const stats = this.#counts(route);
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      // The provider asks for a rest. Seen by several accounts, it is the deployment's; seen by
      // fewer, a prompt may have provoked it (a simulator directive can): a probe confirms it.
      if (stats.failingAccounts >= this.policy.minAccounts) {
        this.onVerdict(route, { kind: 'open', reason: 'retry_after', until: this.restUntil(retryAfterMs), lastError: stats.lastError });
      } else {
        this.onVerdict(route, { kind: 'suspect', lastError: stats.lastError });
      }
      return;
    }
    if (stats.failed < this.policy.minFailures || stats.errorRate < this.policy.errorRate) return;
    if (stats.failingAccounts >= this.policy.minAccounts) {
      this.onVerdict(route, { kind: 'open', reason: 'errors', until: now + this.policy.probeIntervalMs, lastError: stats.lastError });
    } else {
      this.onVerdict(route, { kind: 'suspect', lastError: stats.lastError });
    }
  }

  /** When a rest the provider asked for (`Retry-After`) ends, bounded by `maxRestMs`. */
  restUntil(retryAfterMs: number): number {
    return this.#now() + Math.min(retryAfterMs, this.policy.maxRestMs);
  }

  /**
   * Among routes of equal priority: a route's weight times its success rate squared, times the
   * best median latency of the group over its own (a route twice as slow gets half the share).
   * Routes with fewer than 5 requests in the window keep their weight.
   */
  weightFactors(routes: readonly RouteRef[]): number[] {
    // Asked on every request of a model with equal-priority routes: computed at most once a second.
    const key = routes.map(routeKey).join('\u0001');
    const now = this.#now();
    const cached = this.#factors.get(key);
    if (cached && now - cached.at < FACTORS_TTL_MS) return cached.factors;
    const factors = this.#computeFactors(routes);
    if (this.#factors.size > 10_000) this.#factors.clear();
    this.#factors.set(key, { at: now, factors });
    return factors;
  }

  #computeFactors(routes: readonly RouteRef[]): number[] {
    const stats = routes.map((route) => this.stats(route));
    const known = stats.filter((s) => s.requests >= 5 && s.p50 > 0);
    const best = known.length === 0 ? 0 : Math.min(...known.map((s) => s.p50));
    return stats.map((s) => {
      if (s.requests < 5) return 1;
      const success = (1 - s.errorRate) ** 2;
      const speed = best > 0 && s.p50 > 0 ? best / s.p50 : 1;
      return Math.max(0.05, success * speed);
    });
  }
}
