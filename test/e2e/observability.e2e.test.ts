import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { waitForListing, seedDemoModels } from '../support/clients.ts';
import { fundedAccount, startTestSystem } from '../support/system-fixture.ts';

interface CollectedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP (JSON) trace collector: every service exports its spans here. */
function collector(): Promise<{ server: Server; url: string; spans: CollectedSpan[] }> {
  const spans: CollectedSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && body) {
        const data = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans: Array<{ spans: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string; attributes?: Array<{ key: string; value: Record<string, unknown> }> }> }>;
          }>;
        };
        for (const rs of data.resourceSpans) {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              const attributes = Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
              spans.push({ service, name: s.name, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', attributes });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans })),
  );
}

/** The spans the test needs have all arrived (each service exports on its own schedule). */
const complete = (s: CollectedSpan[]) =>
  [
    ['billing', 'gateway.billing.v1.BillingService/Authorize'],
    ['billing', 'gateway.billing.v1.BillingService/Settle'],
    ['edge-gateway', 'gateway.billing.v1.BillingService/Authorize'],
    ['edge-gateway', 'catalog.resolve'],
    ['edge-gateway', 'POST /v1/chat/completions'],
    ['text', 'gateway.text.v1.TextService/GenerateStream'],
    ['text', 'chat gpt-sim-mini'],
  ].every(([service, name]) => s.some((x) => x.service === service && x.name === name));

describe('one trace across the whole system', () => {
  let system: RunningSystem;
  let otlp: Awaited<ReturnType<typeof collector>>;
  let apiKey: string;

  beforeAll(async () => {
    otlp = await collector();
    system = await startTestSystem({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '100' } });
    await seedDemoModels(system);
    ({ apiKey } = await fundedAccount(system, 1_000_000));
    await waitForListing(system, apiKey, ['gpt-sim-mini']);
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
    otlp?.server.close();
  });

  it('a streamed chat request has linked spans from the gateway, catalog resolution, billing, text and the provider call', async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${system.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      body: JSON.stringify({ model: 'gpt-sim-mini', stream: true, messages: [{ role: 'user', content: 'trace me' }] }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');

    const mine = () => otlp.spans.filter((s) => s.traceId === traceId);
    for (let i = 0; i < 100 && !complete(mine()); i++) await new Promise((r) => setTimeout(r, 100));
    const spans = mine();
    const byName = (service: string, name: string) => spans.find((s) => s.service === service && s.name === name);

    const server = byName('edge-gateway', 'POST /v1/chat/completions')!;
    expect(server.attributes['http.response.status_code']).toBe(200);
    const resolve = byName('edge-gateway', 'catalog.resolve')!;
    expect(resolve.parentSpanId).toBe(server.spanId);
    const authorize = byName('billing', 'gateway.billing.v1.BillingService/Authorize')!;
    const settle = byName('billing', 'gateway.billing.v1.BillingService/Settle')!;
    const generate = byName('text', 'gateway.text.v1.TextService/GenerateStream')!;
    const provider = byName('text', 'chat gpt-sim-mini')!;
    for (const s of [authorize, settle, generate, provider]) expect(s).toBeDefined();
    // Linked: the gateway's client spans are the parents of the services' server spans.
    const parentOf = (s: CollectedSpan) => spans.find((p) => p.spanId === s.parentSpanId);
    expect(parentOf(authorize)).toMatchObject({ service: 'edge-gateway', name: 'gateway.billing.v1.BillingService/Authorize' });
    expect(parentOf(generate)).toMatchObject({ service: 'edge-gateway' });
    expect(provider.parentSpanId).toBe(generate.spanId);
    // GenAI semantic conventions on the provider call.
    expect(provider.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-sim-mini' });
    expect(Number(provider.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
  }, 30_000);
});
