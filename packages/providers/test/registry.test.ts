import { describe, expect, it } from 'vitest';
import { ProviderConfigError, ProviderRegistry, createAdapter, parseProviderConfigs } from '../src/registry.ts';

const SECRET = 'sk-live-very-secret-value';

function entry(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'openai-main', kind: 'openai', baseUrl: 'https://api.openai.com/v1/', apiKey: SECRET, ...overrides };
}

/** The error parsing `raw` throws (or undefined when it parses). */
function parseError(raw: string | undefined): unknown {
  try {
    parseProviderConfigs(raw);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('parseProviderConfigs', () => {
  it('parses entries and normalises the base URL', () => {
    const configs = parseProviderConfigs(
      JSON.stringify([entry({ timeouts: { textFirstByteMs: 5_000 } }), entry({ name: 'g', kind: 'google' })]),
    );
    expect(configs[0]).toEqual({
      name: 'openai-main',
      kind: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: SECRET,
      timeouts: { textFirstByteMs: 5_000 },
    });
    expect(configs).toHaveLength(2);
  });

  it.each([
    [undefined, /PROVIDERS is not set/],
    [`[{"name":"x","apiKey":"${SECRET}"`, /PROVIDERS is not valid JSON/],
    ['{}', /must be a JSON array/],
    [JSON.stringify([entry({ kind: 'azure' })]), /PROVIDERS\[0\] \("openai-main"\): kind must be one of/],
    [JSON.stringify([entry(), entry({ name: 'b', baseUrl: 'ftp://x' })]), /PROVIDERS\[1\] \("b"\): baseUrl/],
    [JSON.stringify([entry({ baseUrl: `https://user:${SECRET}@host/v1` })]), /must not carry credentials/],
    [JSON.stringify([entry({ apiKey: '' })]), /apiKey must be a non-empty string/],
    [JSON.stringify([entry({ apikey: SECRET })]), /unknown field "apikey"/],
    [JSON.stringify([entry({ timeouts: { textMs: 1 } })]), /timeouts.textMs is not a known timeout/],
    [JSON.stringify([entry({ timeouts: { listMs: -1 } })]), /timeouts.listMs must be a positive/],
    [JSON.stringify([entry(), entry()]), /PROVIDERS\[1\] \("openai-main"\): name is used twice/],
    [JSON.stringify([entry({ name: 'bad name!' })]), /name must be/],
  ])('rejects %s with a message naming the problem', (raw, pattern) => {
    const err = parseError(raw);
    expect(err).toBeInstanceOf(ProviderConfigError);
    expect((err as Error).message).toMatch(pattern);
    expect((err as Error).message).not.toContain(SECRET);
  });
});

describe('adapters', () => {
  it('builds each kind with its dialects and capabilities', async () => {
    const registry = new ProviderRegistry(
      parseProviderConfigs(
        JSON.stringify([
          entry({ name: 'o', imageHosts: ['*.blob.core.windows.net'] }),
          entry({ name: 'a', kind: 'anthropic', baseUrl: 'https://api.anthropic.com' }),
          entry({ name: 'g', kind: 'google', baseUrl: 'https://generativelanguage.googleapis.com/v1beta' }),
          entry({ name: 'c', kind: 'compat', baseUrl: 'http://localhost:8000/v1' }),
        ]),
      ),
    );
    const summary = registry.list().map((a) => ({
      name: a.name,
      dialects: a.textDialects,
      counts: a.countTokens !== undefined,
      images: a.generateImages !== undefined,
      videos: a.createVideo !== undefined,
      hosts: a.imageHosts,
    }));
    expect(summary).toEqual([
      { name: 'o', dialects: ['chat', 'responses'], counts: true, images: true, videos: true, hosts: ['api.openai.com', '*.blob.core.windows.net'] },
      { name: 'a', dialects: ['messages'], counts: true, images: false, videos: false, hosts: ['api.anthropic.com'] },
      { name: 'g', dialects: ['gemini'], counts: true, images: true, videos: true, hosts: ['generativelanguage.googleapis.com'] },
      { name: 'c', dialects: ['chat'], counts: false, images: false, videos: false, hosts: ['localhost:8000'] },
    ]);
    expect(registry.get('g')?.kind).toBe('google');
    expect(registry.get('missing')).toBeUndefined();
    await registry.close();
  });

  it('reads PROVIDERS from an env record', async () => {
    const registry = ProviderRegistry.fromEnv({ PROVIDERS: JSON.stringify([entry()]) });
    expect(registry.list().map((a) => a.name)).toEqual(['openai-main']);
    await registry.close();
  });

  it('refuses a dialect the provider does not speak, as not retryable', async () => {
    const adapter = createAdapter({ name: 'c', kind: 'compat', baseUrl: 'http://127.0.0.1:9/v1', apiKey: SECRET });
    await expect(adapter.text('messages', { model: 'm' }, { stream: false })).rejects.toMatchObject({
      code: 'capability_not_supported',
      retryable: false,
    });
    await adapter.close?.();
  });
});
