/**
 * Values that switch on every optional part of the chart (dotted paths over values.yaml): the
 * console on its own host, the simulator as every provider, the Ingress with TLS, ServiceMonitors, OTLP export,
 * the NATS URL from a Secret, an extra env variable.
 */
export const EVERYTHING_ENABLED: Record<string, unknown> = {
  'console.enabled': true,
  'simulator.enabled': true,
  'providers.existingSecret': '',
  'ingress.enabled': true,
  'ingress.className': 'nginx',
  'ingress.hosts': ['api.example.com'],
  'ingress.tls': [{ secretName: 'api-tls', hosts: ['api.example.com'] }],
  'console.ingress.host': 'console.example.com',
  'metrics.serviceMonitor.enabled': true,
  'metrics.serviceMonitor.labels': { release: 'prometheus' },
  'observability.otlpEndpoint': 'http://otel-collector.observability:4318',
  'events.existingSecret': 'gateway-nats',
  'events.namespace': 'prod',
  'gateway.publicBasePath': '/api/v1',
  'gateway.env': { EXTRA_SETTING: 'on' },
};

/** The dotted paths as a nested values object (for a `-f` file). */
export function nested(paths: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(paths)) {
    const keys = path.split('.');
    let node = out;
    for (const k of keys.slice(0, -1)) node = (node[k] ??= {}) as Record<string, unknown>;
    node[keys.at(-1)!] = value;
  }
  return out;
}
