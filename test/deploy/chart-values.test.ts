import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { isMap, parse, parseDocument, type YAMLMap } from 'yaml';
import { CHART, read } from './support.ts';
import { EVERYTHING_ENABLED } from './chart-fixtures.ts';

// values.yaml against values.schema.json (the same check `helm install` makes), a set of values
// the schema must refuse, and README.md's table against values.yaml, key by key.

type Values = Record<string, unknown>;
type JsonSchema = { $ref?: string; properties?: Record<string, JsonSchema>; required?: string[]; definitions?: Record<string, JsonSchema>; $schema?: string };

const schema = JSON.parse(read(CHART, 'values.schema.json')) as JsonSchema;
const valuesText = read(CHART, 'values.yaml');
const values = parse(valuesText) as Values;
const ajv = new Ajv({ allErrors: true, allowUnionTypes: true, strict: true });
const validate = ajv.compile(schema);

/** Applies `dotted.path=value` to a copy of the default values. */
function withValue(path: string, value: unknown): Values {
  const copy = structuredClone(values);
  const keys = path.split('.');
  let node = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
  node[keys.at(-1)!] = value;
  return copy;
}

const errors = () => ajv.errorsText(validate.errors, { separator: '\n' });

describe('values.schema.json', () => {
  it('is a draft-07 schema', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
  });

  it('accepts the default values.yaml', () => {
    expect(validate(values), `${errors()}`).toBe(true);
  });

  it('accepts the "everything enabled" values the helm checks render', () => {
    const merged = structuredClone(values);
    for (const [path, value] of Object.entries(EVERYTHING_ENABLED)) {
      const keys = path.split('.');
      let node = merged as Record<string, unknown>;
      for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
      node[keys.at(-1)!] = value;
    }
    expect(validate(merged), `${errors()}`).toBe(true);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['gatway', { replicaCount: 1 }, 'must NOT have additional properties'],
    ['gateway.replicas', 3, 'must NOT have additional properties'],
    ['gateway.publicBasePath', 'v1', 'must match pattern'],
    ['gateway.publicBasePath', '/v1/', 'must match pattern'],
    ['billing.replicaCount', -1, 'must be >= 0'],
    ['text.replicaCount', 1.5, 'must be integer'],
    ['logLevel', 'verbose', 'must be equal to one of the allowed values'],
    ['events.namespace', 'team.a', 'must match pattern'],
    ['events.natsUrl', 'http://nats:4222', 'must match pattern'],
    ['database.existingSecret', '', 'must match pattern'],
    ['providers.existingSecret', 'Provider_Keys', 'must match pattern'],
    ['billing.resources', '1 cpu', 'must be object'],
    ['media.resources', { requests: { memory: '1 gig' } }, 'must match pattern'],
    ['gateway.autoscaling.targetCPUUtilizationPercentage', 150, 'must be <= 100'],
    ['catalog.pdb.maxUnavailable', '50 percent', 'must match exactly one schema in oneOf'],
    ['networkPolicy.providers.ports', [70000], 'must be <= 65535'],
    ['networkPolicy.ingressFrom', [{ namespace: 'ingress-nginx' }], 'must NOT have additional properties'],
    ['metrics.serviceMonitor.interval', 'often', 'must match pattern'],
    ['gateway.env', { '1BAD': 'x' }, 'property name must be valid'],
    ['gateway.env', { GOOD: { nested: true } }, 'must be string,number,boolean'],
    ['migrations.hookDeletePolicy', 'always', 'must match pattern'],
    ['console.enabled', 'yes', 'must be boolean'],
    ['console.ingress.host', 'Console_Example', 'must match pattern'],
    ['console.adminPort', 80, 'must be >= 1024'],
    ['console.adminPort', '8082', 'must be integer'],
    ['console.ingress.host', 'console.example.com/', 'must match pattern'],
    // The console no longer shares the API's hosts under a path: it has a host of its own.
    ['ingress.consolePath', '/', 'must NOT have additional properties'],
    ['image.pullPolicy', 'Sometimes', 'must be equal to one of the allowed values'],
    ['observability.otlpEndpoint', 'otel:4318', 'must match pattern'],
    ['shutdown.preStopSleepSeconds', 600, 'must be <= 120'],
  ];
  it.each(invalid)('rejects %s = %j', (path, value, message) => {
    expect(validate(withValue(path, value))).toBe(false);
    expect(errors()).toContain(message);
  });

  it('requires every documented section (a values file cannot silently drop one)', () => {
    const copy = structuredClone(values);
    delete copy.networkPolicy;
    expect(validate(copy)).toBe(false);
    expect(errors()).toContain("must have required property 'networkPolicy'");
  });
});

/** The type column of the README: list, object, int, string, boolean. */
const typeOf = (v: unknown) => (Array.isArray(v) ? 'list' : typeof v === 'object' ? 'object' : Number.isInteger(v) ? 'int' : typeof v);

/** Resolves a local `$ref`. */
function resolve(node: JsonSchema | undefined): JsonSchema | undefined {
  if (!node?.$ref) return node;
  return resolve(schema.definitions?.[node.$ref.split('/').at(-1)!]);
}

/**
 * The keys a reader sets: a key is a section (not listed itself) when its schema is an object
 * with required properties; anything else (scalars, lists, free-form maps such as `resources`
 * or `env`) is one value.
 */
function leaves(map: YAMLMap, node: JsonSchema | undefined, prefix = ''): Array<{ key: string; value: unknown; described: boolean }> {
  const out: Array<{ key: string; value: unknown; described: boolean }> = [];
  map.items.forEach((pair, i) => {
    const name = String((pair.key as { value: unknown }).value);
    const key = prefix ? `${prefix}.${name}` : name;
    const sub = resolve(node?.properties?.[name]);
    if (isMap(pair.value) && sub?.properties && sub.required?.length) {
      out.push(...leaves(pair.value, sub, key));
      return;
    }
    const comment = `${(pair.key as { commentBefore?: string }).commentBefore ?? ''}\n${i === 0 ? (map.commentBefore ?? '') : ''}`;
    out.push({ key, value: (pair.value as { toJSON(): unknown }).toJSON(), described: /(^|\n)\s*-- \S/.test(comment) });
  });
  return out;
}

describe('the chart README', () => {
  const readme = read(CHART, 'README.md');
  const rows = new Map<string, { type: string; def: string; description: string }>();
  for (const m of readme.matchAll(/^\| `([^`]+)` \| (\w+) \| `(.*)` \| (.+) \|$/gm)) {
    rows.set(m[1]!, { type: m[2]!, def: m[3]!, description: m[4]! });
  }
  const doc = parseDocument(valuesText);
  const all = leaves(doc.contents as YAMLMap, schema);

  it('has a row for every value of values.yaml and no other', () => {
    expect([...rows.keys()].sort()).toEqual(all.map((l) => l.key).sort());
  });

  it("states each value's type and default as values.yaml has them", () => {
    for (const leaf of all) {
      const row = rows.get(leaf.key)!;
      expect(row.def, `${leaf.key}`).toBe(JSON.stringify(leaf.value));
      expect(row.type, `${leaf.key}`).toBe(typeOf(leaf.value));
      expect(row.description.length, `${leaf.key}`).toBeGreaterThan(5);
    }
  });

  it('every value carries a `# --` description in values.yaml', () => {
    expect(all.filter((l) => !l.described).map((l) => l.key)).toEqual([]);
  });
});
