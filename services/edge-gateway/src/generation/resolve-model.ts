import { GatewayError } from '@gw/errors';
import { trace } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';

/**
 * Looked up at each use: `@opentelemetry/api` is loaded both as ESM (here) and as CommonJS (by the
 * SDK), and a tracer taken at module load, before the service registers the SDK, stays a no-op.
 */
const tracer = () => trace.getTracer('@gw/edge-gateway');

/**
 * Step 5 of the order of checks, for every generation route, in its own span: the catalog's
 * answer comes from the gateway's snapshot of it (no call per request), and the trace still shows
 * the resolution and its outcome. The request remembers its model, so that a service's answer
 * that every route of it is cooling down is noted in one place (the app's `onError` hook). Asked
 * by an alias, its trace and log lines name the model and the name asked for. Billing records the model
 * (`resolved.id`): an alias is charged and counted as its model.
 */
export function resolveModel(deps: GatewayDeps, request: FastifyRequest, model: string, endpoint: string): ResolvedModel {
  const resolved = tracer().startActiveSpan('catalog.resolve', { attributes: { 'gen_ai.request.model': model, 'gw.endpoint': endpoint } }, (span) => {
    try {
      const found = deps.catalogCache.resolve(model, endpoint);
      // Asked by an alias: the trace names the model it was resolved, billed and counted as.
      if (found.id !== model) span.setAttribute('gw.model', found.id);
      return found;
    } catch (err) {
      span.setAttribute('error.type', err instanceof GatewayError ? err.code : 'error');
      throw err;
    } finally {
      span.end();
    }
  });
  request.resolvedModel = resolved.id;
  request.requestedModel = resolved.requested;
  // The request's later log lines name both (its access line too: see app.ts).
  if (resolved.requested !== resolved.id) request.log = request.log.child({ model: resolved.id, requested_model: resolved.requested });
  return resolved;
}
