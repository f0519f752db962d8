import { z } from 'zod';

/** A config problem found at start: names every bad variable so the operator can fix them at once. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses environment variables once, typed, and fails at boot with a message that names each
 * missing or invalid variable (never its value: some are secrets).
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
  throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
}

/** `true`/`false`/`1`/`0`/`yes`/`no` from an environment variable. */
export const envBool = (fallback: boolean) => z.stringbool().default(fallback);

/**
 * Fastify's `trustProxy` from an environment variable: `false` (none: the peer is the client), or
 * the proxies' addresses, CIDRs or proxy-addr's names (`loopback`, `linklocal`, `uniquelocal`),
 * comma-separated. Not `true` nor a hop count: those believe entries the client writes itself.
 */
export const trustProxyEnv = () =>
  z
    .string()
    .default('false')
    .transform((value, ctx): false | string[] => {
      const v = value.trim();
      if (v === 'false' || v === '') return false;
      if (v === 'true' || /^\d+$/.test(v)) {
        ctx.addIssue({ code: 'custom', message: 'give the addresses or CIDRs of the proxies in front (e.g. uniquelocal), not true or a hop count' });
        return z.NEVER;
      }
      return v.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
    });

/** Settings every service shares: infrastructure, logging, telemetry, shutdown. */
export const commonEnv = {
  NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  /** Prefix of every NATS subject and stream name; isolates installations sharing one NATS server. */
  EVENTS_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/, 'letters, digits, _ and - only')
    .default(''),
  /**
   * This deployment's identity, stamped on every event it publishes; its durable consumers are its
   * own and pass over events stamped by another (two deployments sharing a NATS server and a
   * namespace). Empty: no stamp, shared durables.
   */
  DEPLOYMENT_ID: z.string().max(200).default(''),
  /**
   * Shared secret between services: every gRPC server refuses calls (UNAUTHENTICATED) whose
   * `authorization` metadata is not `Bearer <token>`, and every client sends it. Empty: off.
   * The health service answers without it (Kubernetes probes send no metadata).
   */
  SERVICE_TOKEN: z
    .string()
    .refine((t) => t === '' || t.length >= 16, 'at least 16 characters (or empty to turn the check off)')
    .default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(25_000),
  /** Written with the bound address once the service serves (used by the launcher and tests). */
  READY_FILE: z.string().optional(),
};
