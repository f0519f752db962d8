import { randomUUID } from 'node:crypto';
import { isProviderError, type ProviderRegistry, type RouteRef } from '@gw/providers';
import { translateRequest } from '@gw/translate';
import { providerDialect } from '../domain/dialects.ts';
import type { Probe } from './shared-route-health.ts';

/** Probe calls carry this request id prefix upstream (`x-request-id`), so providers' logs tell them apart. */
export const PROBE_REQUEST_PREFIX = 'route-probe-';

/**
 * The gateway's own check of a route: a one-token answer to "ping", in the provider's protocol,
 * billed to nobody. It passes when the provider answers, even with a refusal of the request
 * itself (a 400: some models want more than one output token), since the provider is up.
 */
export function probeWith(providers: ProviderRegistry): Probe {
  return async (route: RouteRef, timeoutMs: number) => {
    const adapter = providers.get(route.provider);
    if (!adapter) throw new Error(`Provider ${route.provider} is not configured.`);
    const dialect = providerDialect(adapter, 'chat');
    const body = translateRequest('chat', dialect, { model: route.upstreamModel, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 }, { upstreamModel: route.upstreamModel });
    try {
      await adapter.text(dialect, { ...body, model: route.upstreamModel }, { stream: false, timeoutMs, requestId: `${PROBE_REQUEST_PREFIX}${randomUUID()}` });
    } catch (err) {
      if (isProviderError(err) && !err.retryable) return;
      throw err;
    }
  };
}
