import { readFileSync } from 'node:fs';
import { createClient, textV1 } from '@gw/contracts';
import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { LOCAL_RUN_FILE } from '../clients.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

const STATES: Record<number, string> = {
  [textV1.RouteState.CLOSED]: 'closed',
  [textV1.RouteState.OPEN]: 'open',
  [textV1.RouteState.HALF_OPEN]: 'half_open',
};

/** The text service's address: TEXT_ADDR, else the running `pnpm start`, else the local default. */
function textAddress(): string {
  if (process.env.TEXT_ADDR) return process.env.TEXT_ADDR;
  try {
    const local = JSON.parse(readFileSync(LOCAL_RUN_FILE, 'utf8')) as { text?: unknown };
    if (typeof local.text === 'string' && local.text !== '') return local.text;
  } catch {
    // no local run recorded
  }
  return '127.0.0.1:50053';
}

const iso = (ms: bigint) => (ms > 0n ? new Date(Number(ms)).toISOString() : null);

export function routeHealthOut(r: textV1.RouteHealth) {
  return {
    provider: r.provider,
    upstream_model: r.upstreamModel,
    state: STATES[r.state] ?? 'closed',
    reason: r.reason === '' ? null : r.reason,
    since: iso(r.sinceUnixMs),
    next_probe_at: r.state === textV1.RouteState.CLOSED ? null : iso(r.untilUnixMs),
    failed_probes: r.failedProbes,
    requests: r.requests,
    error_rate: Math.round(r.errorRate * 1000) / 1000,
    failing_accounts: r.failingAccounts,
    latency_p50_ms: r.latencyP50Ms,
    latency_p99_ms: r.latencyP99Ms,
    weight_factor: Math.round(r.weightFactor * 1000) / 1000,
    last_error: r.lastError === '' ? null : r.lastError,
    last_error_at: iso(r.lastErrorUnixMs),
  };
}

/**
 * `routes health`: every text route the deployment has seen, with its shared breaker state and the
 * answering text replica's pooled evidence (docs/routing.md). Routes of the catalog that never had
 * a request are listed as closed, without evidence.
 */
export function routeCommands(program: Command, run: Run): void {
  program
    .command('routes')
    .description('text routes (provider x upstream model)')
    .command('health')
    .description('each route: state, error rate, latency p50/p99, last error, since when')
    .option('--json', 'print one JSON object')
    .action((o: { json?: boolean }) =>
      run(async (c) => {
        const text = createClient(textV1.TextService, textAddress(), { defaultTimeoutMs: 10_000 });
        try {
          const [health, catalog] = await Promise.all([text.listRouteHealth({}), c.catalog.listModels({ listableOnly: false })]);
          const seen = new Set(health.routes.map((r) => `${r.provider}\u0000${r.upstreamModel}`));
          const unseen = catalog.models
            .flatMap((m) => (m.routes.length > 0 ? m.routes : [{ provider: m.provider, upstreamModel: m.upstreamModel }]))
            .filter((r) => !seen.has(`${r.provider}\u0000${r.upstreamModel}`) && (seen.add(`${r.provider}\u0000${r.upstreamModel}`), true))
            .map((r) => ({ provider: r.provider, upstreamModel: r.upstreamModel, state: textV1.RouteState.CLOSED, weightFactor: 1 }) as textV1.RouteHealth);
          const routes = [...health.routes, ...unseen].sort((a, b) => a.provider.localeCompare(b.provider) || a.upstreamModel.localeCompare(b.upstreamModel));
          return { routes: routes.map(routeHealthOut) };
        } finally {
          text.close();
        }
      }, !!o.json),
    );
}
