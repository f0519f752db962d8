import { createAnthropicAdapter } from './anthropic/adapter.ts';
import { createCompatAdapter } from './compat/adapter.ts';
import { createGoogleAdapter } from './google/adapter.ts';
import { isRecord } from './json.ts';
import { createOpenAiAdapter } from './openai/adapter.ts';
import { instrumentAdapter } from './telemetry.ts';
import { DEFAULT_TIMEOUTS } from './types.ts';
import type { ProviderAdapter, ProviderConfig, ProviderKind, Timeouts } from './types.ts';

type AdapterFactory = (config: ProviderConfig, imageHosts: readonly string[]) => ProviderAdapter;

const FACTORIES: Record<ProviderKind, AdapterFactory> = {
  openai: createOpenAiAdapter,
  anthropic: createAnthropicAdapter,
  google: createGoogleAdapter,
  compat: createCompatAdapter,
};

const KINDS = Object.keys(FACTORIES);
const CONFIG_FIELDS = new Set(['name', 'kind', 'baseUrl', 'apiKey', 'timeouts', 'imageHosts']);
const TIMEOUT_FIELDS = new Set(Object.keys(DEFAULT_TIMEOUTS));

/** Builds the adapter a config describes. Its image URLs may come from the base URL's host and `imageHosts`. */
export function createAdapter(config: ProviderConfig): ProviderAdapter {
  const imageHosts = [new URL(config.baseUrl).host, ...(config.imageHosts ?? [])];
  return FACTORIES[config.kind](config, imageHosts);
}

/** A bad `PROVIDERS` value. The message names the entry and field, never the key's value. */
export class ProviderConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderConfigError';
  }
}

function checkTimeouts(value: unknown, fail: (why: string) => never): Partial<Timeouts> | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) fail('timeouts must be an object');
  const out: Partial<Timeouts> = {};
  for (const [key, ms] of Object.entries(value)) {
    if (!TIMEOUT_FIELDS.has(key)) fail(`timeouts.${key} is not a known timeout (${[...TIMEOUT_FIELDS].join(', ')})`);
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) fail(`timeouts.${key} must be a positive number of ms`);
    out[key as keyof Timeouts] = ms;
  }
  return out;
}

function checkBaseUrl(value: unknown, fail: (why: string) => never): string {
  let url: URL;
  try {
    url = new URL(typeof value === 'string' ? value : '');
  } catch {
    fail('baseUrl must be an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail('baseUrl must be an absolute http(s) URL');
  // Credentials belong in apiKey only; in a URL they would end up in logs.
  if (url.username !== '' || url.password !== '') fail('baseUrl must not carry credentials');
  if (url.search !== '' || url.hash !== '') fail('baseUrl must not have a query or fragment');
  return (value as string).replace(/\/+$/, '');
}

function checkEntry(value: unknown, index: number): ProviderConfig {
  const name = isRecord(value) && typeof value['name'] === 'string' ? value['name'] : undefined;
  const label = `PROVIDERS[${index}]${name === undefined ? '' : ` (${JSON.stringify(name.slice(0, 64))})`}`;
  const fail = (why: string): never => {
    throw new ProviderConfigError(`${label}: ${why}`);
  };
  if (!isRecord(value)) return fail('must be an object');
  for (const key of Object.keys(value)) if (!CONFIG_FIELDS.has(key)) fail(`unknown field "${key.slice(0, 64)}"`);
  if (name === undefined || !/^[\w.-]{1,64}$/.test(name)) fail('name must be 1-64 letters, digits, "_", "-" or "."');
  const kind = value['kind'];
  if (typeof kind !== 'string' || !KINDS.includes(kind)) fail(`kind must be one of ${KINDS.join(', ')}`);
  const baseUrl = checkBaseUrl(value['baseUrl'], fail);
  const apiKey = value['apiKey'];
  if (typeof apiKey !== 'string' || apiKey.trim() === '') fail('apiKey must be a non-empty string');
  const imageHosts = value['imageHosts'];
  if (imageHosts !== undefined && (!Array.isArray(imageHosts) || !imageHosts.every((h) => typeof h === 'string' && h !== ''))) {
    fail('imageHosts must be an array of host names');
  }
  const timeouts = checkTimeouts(value['timeouts'], fail);
  return {
    name: name!,
    kind: kind as ProviderKind,
    baseUrl,
    apiKey: apiKey as string,
    ...(timeouts === undefined ? {} : { timeouts }),
    ...(imageHosts === undefined ? {} : { imageHosts: imageHosts as string[] }),
  };
}

/**
 * Parses the `PROVIDERS` env var: a JSON array of `{name, kind, baseUrl, apiKey, timeouts?, imageHosts?}`.
 * Throws a `ProviderConfigError` naming the bad entry.
 */
export function parseProviderConfigs(raw: string | undefined): ProviderConfig[] {
  if (raw === undefined || raw.trim() === '') throw new ProviderConfigError('PROVIDERS is not set');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // The parser's own message quotes the text around the error, which may be a key.
    throw new ProviderConfigError('PROVIDERS is not valid JSON');
  }
  if (!Array.isArray(parsed)) throw new ProviderConfigError('PROVIDERS must be a JSON array');
  const configs = parsed.map(checkEntry);
  const seen = new Set<string>();
  configs.forEach((config, index) => {
    if (seen.has(config.name)) {
      throw new ProviderConfigError(`PROVIDERS[${index}] (${JSON.stringify(config.name)}): name is used twice`);
    }
    seen.add(config.name);
  });
  return configs;
}

/** The configured providers' adapters by name. */
export class ProviderRegistry {
  readonly #adapters: Map<string, ProviderAdapter>;

  constructor(configs: readonly ProviderConfig[]) {
    this.#adapters = new Map(configs.map((config) => [config.name, instrumentAdapter(createAdapter(config), config.baseUrl)]));
  }

  /** Reads and validates `PROVIDERS` from the environment. */
  static fromEnv(env: Record<string, string | undefined> = process.env): ProviderRegistry {
    return new ProviderRegistry(parseProviderConfigs(env['PROVIDERS']));
  }

  get(name: string): ProviderAdapter | undefined {
    return this.#adapters.get(name);
  }

  list(): ProviderAdapter[] {
    return [...this.#adapters.values()];
  }

  /** Closes every provider's connection pool. */
  async close(): Promise<void> {
    await Promise.all(this.list().map((adapter) => adapter.close?.()));
  }
}
