import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { textV1 } from '@gw/contracts';
import type { BreakerState, OpenReason, RouteRef, RouteStatus, Sample, WindowStats } from '@gw/providers';

const STATE_TO_PROTO: Record<BreakerState, textV1.RouteState> = {
  closed: textV1.RouteState.CLOSED,
  open: textV1.RouteState.OPEN,
  half_open: textV1.RouteState.HALF_OPEN,
};
const REASONS = new Set<string>(['', 'errors', 'probe_failed', 'retry_after']);

export function stateToProto(state: BreakerState): textV1.RouteState {
  return STATE_TO_PROTO[state];
}

/** A route's state as stored in the KV bucket: a `RouteHealth` message without evidence. */
export function encodeStatus(status: RouteStatus): Uint8Array {
  const message = create(textV1.RouteHealthSchema, {
    provider: status.provider,
    upstreamModel: status.upstreamModel,
    state: stateToProto(status.state),
    reason: status.reason,
    sinceUnixMs: BigInt(status.since),
    untilUnixMs: BigInt(status.until),
    lastError: status.lastError,
    lastErrorUnixMs: BigInt(status.lastErrorAt),
    failedProbes: status.failedProbes,
    probeOwner: status.probeOwner,
    probeLeaseUntilUnixMs: BigInt(status.probeLeaseUntil),
  });
  return toBinary(textV1.RouteHealthSchema, message);
}

export function decodeStatus(bytes: Uint8Array): RouteStatus | undefined {
  try {
    const m = fromBinary(textV1.RouteHealthSchema, bytes);
    const state = m.state === textV1.RouteState.OPEN ? 'open' : m.state === textV1.RouteState.HALF_OPEN ? 'half_open' : 'closed';
    return {
      provider: m.provider,
      upstreamModel: m.upstreamModel,
      state,
      reason: (REASONS.has(m.reason) ? m.reason : '') as OpenReason,
      since: Number(m.sinceUnixMs),
      until: Number(m.untilUnixMs),
      failedProbes: m.failedProbes,
      probeOwner: m.probeOwner,
      probeLeaseUntil: Number(m.probeLeaseUntilUnixMs),
      lastError: m.lastError,
      lastErrorAt: Number(m.lastErrorUnixMs),
    };
  } catch {
    return undefined;
  }
}

/** The operator's view of a route: its shared state and this replica's pooled evidence. */
export function healthView(status: RouteStatus, stats: WindowStats, weightFactor: number): textV1.RouteHealth {
  const lastErrorAt = Math.max(stats.lastErrorAt, status.lastErrorAt);
  return create(textV1.RouteHealthSchema, {
    provider: status.provider,
    upstreamModel: status.upstreamModel,
    state: stateToProto(status.state),
    reason: status.reason,
    sinceUnixMs: BigInt(status.since),
    untilUnixMs: BigInt(status.until),
    lastError: stats.lastErrorAt >= status.lastErrorAt ? stats.lastError : status.lastError,
    lastErrorUnixMs: BigInt(lastErrorAt),
    errorRate: stats.errorRate,
    requests: stats.requests,
    failingAccounts: stats.failingAccounts,
    latencyP50Ms: Math.round(stats.p50),
    latencyP99Ms: Math.round(stats.p99),
    weightFactor,
    failedProbes: status.failedProbes,
  });
}

export function encodeEvidence(replica: string, samples: readonly Sample[]): Uint8Array {
  return toBinary(
    textV1.RouteEvidenceSchema,
    create(textV1.RouteEvidenceSchema, {
      replica,
      routes: samples.map((s) => ({
        provider: s.provider,
        upstreamModel: s.upstreamModel,
        ok: s.ok,
        failingAccounts: [...s.failed.keys()],
        failedCounts: [...s.failed.values()],
        latenciesMs: s.latencies.map((ms) => Math.round(ms)),
        lastError: s.lastError,
      })),
    }),
  );
}

export function decodeEvidence(bytes: Uint8Array): { replica: string; samples: Sample[] } {
  const m = fromBinary(textV1.RouteEvidenceSchema, bytes);
  return {
    replica: m.replica,
    samples: m.routes.map((r) => ({
      provider: r.provider,
      upstreamModel: r.upstreamModel,
      ok: r.ok,
      failed: new Map(r.failingAccounts.map((account, i) => [account, r.failedCounts[i] ?? 1])),
      latencies: r.latenciesMs,
      lastError: r.lastError,
    })),
  };
}

/** A route's KV key: NATS subject tokens allow neither the NUL separator nor every model id character. */
export function kvKey(route: RouteRef): string {
  return Buffer.from(`${route.provider}\u0000${route.upstreamModel}`).toString('base64url');
}

/** The route a KV key names (see `kvKey`); undefined for a key of another shape. */
export function routeOfKey(key: string): RouteRef | undefined {
  const [provider, upstreamModel, ...rest] = Buffer.from(key, 'base64url').toString('utf8').split('\u0000');
  return provider === undefined || upstreamModel === undefined || rest.length > 0 ? undefined : { provider, upstreamModel };
}
