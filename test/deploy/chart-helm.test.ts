import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { EVERYTHING_ENABLED, nested } from './chart-fixtures.ts';
import { CHART, DEPLOY, SERVICES, facts, read } from './support.ts';

// `helm lint` and `helm template` of the chart, with default values and with every optional part
// on, and checks of what it renders. Runs where `helm` is on PATH; skipped (with a message) where
// it is not, such as this project's CI machines, where chart-static.test.ts still checks the
// templates.

const hasHelm = spawnSync('helm', ['version', '--short'], { encoding: 'utf8' }).status === 0;
if (!hasHelm) {
  process.stdout.write('[test/deploy] helm is not on PATH: helm lint/template checks are skipped (chart-static.test.ts checks the templates without it)\n');
}

const RELEASE = 'gw';
const NAMESPACE = 'gateway';
const KUBE_VERSION = '1.31.0';
const PREFIX = `${RELEASE}-generation-gateway`;
const APP_VERSION = (parse(read(CHART, 'Chart.yaml')) as { appVersion: string }).appVersion;

// Loose shapes of the rendered objects: only the fields the checks read.
interface Probe {
  grpc?: { port: number };
  httpGet?: { path: string; port: string };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: Array<{ name: string; containerPort: number }>;
  envFrom?: Array<{ configMapRef: { name: string } }>;
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }>;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop: { sleep?: { seconds: number } } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
  volumeMounts: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  securityContext: { runAsNonRoot: boolean; seccompProfile: { type: string } };
  automountServiceAccountToken: boolean;
  containers: Container[];
  volumes: Array<{ name: string; emptyDir?: object }>;
}
interface K8sObject {
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec: {
    replicas?: number;
    selector?: { matchLabels: Record<string, string> } & Record<string, string>;
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    scaleTargetRef: { name: string };
    minReplicas: number;
    maxReplicas: number;
    ports: Array<{ name: string; port: number; targetPort: string }>;
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress?: Array<{ from?: Array<{ podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: object }>; ports?: Array<{ port: number | string }> }>;
    egress?: Array<{ to?: Array<{ podSelector?: { matchLabels: Record<string, string> } }>; ports: Array<{ port: number | string }> }>;
    rules: Array<{ host: string; http: { paths: Array<{ path: string; backend: { service: { name: string; port: { name: string } } } }> } }>;
    tls?: unknown[];
    endpoints: Array<{ port: string }>;
  };
}

let work = '';
let chart = '';

function helm(args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync('helm', args, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HELM_CACHE_HOME: join(work, 'cache'), HELM_CONFIG_HOME: join(work, 'config'), HELM_DATA_HOME: join(work, 'data') } });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function render(values: Record<string, unknown> = {}): K8sObject[] {
  const file = join(work, `values-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify(values));
  const r = helm(['template', RELEASE, chart, '-n', NAMESPACE, '--kube-version', KUBE_VERSION, '-f', file]);
  expect(r.status, `${r.stderr}`).toBe(0);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

const ofKind = (objs: K8sObject[], kind: string) => objs.filter((o) => o.kind === kind);
const named = (objs: K8sObject[], kind: string, name: string) => {
  const found = objs.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} rendered`);
  return found;
};
const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const componentsOf = (peers: Array<{ podSelector?: { matchLabels: Record<string, string> } }> = []) =>
  peers.map((p) => p.podSelector?.matchLabels['app.kubernetes.io/component']).filter(Boolean).sort();

beforeAll(() => {
  if (!hasHelm) return;
  work = mkdtempSync(join(tmpdir(), 'gw-helm-'));
  chart = join(work, 'generation-gateway');
  // The chart as a fresh clone has it: nothing fetched, nothing added (it declares no dependencies).
  cpSync(CHART, chart, { recursive: true });
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

// helm runs as a child process; beside deploy-output.test.ts building every service's output on the
// same two cores, one lint took 38 s, past the default 30 s.
describe('helm lint and helm template', { timeout: 120_000 }, () => {
  it.skipIf(!hasHelm)('lints clean (--strict) with default values and with everything enabled', () => {
    const plain = helm(['lint', chart, '--strict', '--kube-version', KUBE_VERSION]);
    expect(plain.status, `${plain.stdout}${plain.stderr}`).toBe(0);
    const file = join(work, 'everything.yaml');
    writeFileSync(file, stringify(nested(EVERYTHING_ENABLED)));
    const all = helm(['lint', chart, '--strict', '--kube-version', KUBE_VERSION, '-f', file]);
    expect(all.status, `${all.stdout}${all.stderr}`).toBe(0);
  });

  it.skipIf(!hasHelm)('renders the default install: the six core services, hardened, probed, drained, autoscaled', () => {
    const objs = render();
    const core = SERVICES.filter((s) => !s.optional);
    const deployments = ofKind(objs, 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(core.map((s) => `${PREFIX}-${s.name}`).sort());
    // The one Secret the chart makes itself: the service token (secrets of the operator's are referenced).
    expect(ofKind(objs, 'Secret').map((x) => x.metadata.name)).toEqual([`${PREFIX}-service-token`]);
    expect(ofKind(objs, 'Ingress')).toEqual([]);
    expect(ofKind(objs, 'ServiceMonitor')).toEqual([]);

    for (const s of core) {
      const name = `${PREFIX}-${s.name}`;
      const d = named(objs, 'Deployment', name);
      const pod = d.spec.template.spec;
      const labels = d.spec.template.metadata.labels;
      const [c] = pod.containers;
      expect(pod.containers).toHaveLength(1);
      expect(c!.image).toBe(`registry.example.com/generation-gateway/${s.name}:${APP_VERSION}`);

      // Probes.
      for (const probe of [c!.startupProbe, c!.readinessProbe, c!.livenessProbe]) expect(probe, `${s.name} probe`).toBeDefined();
      expect(c!.ports?.[0]).toMatchObject({ name: s.protocol, containerPort: s.port });
      const grpcProbe = { port: s.port };
      const expected = s.protocol === 'grpc' ? [grpcProbe, grpcProbe, grpcProbe] : [{ path: '/healthz', port: 'http' }, { path: '/readyz', port: 'http' }, { path: '/healthz', port: 'http' }];
      expect([c!.startupProbe, c!.readinessProbe, c!.livenessProbe].map((p) => p?.grpc ?? p?.httpGet)).toEqual(expected);

      // Hardening.
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(c!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(pod.volumes.find((v) => v.name === 'tmp')?.emptyDir).toBeDefined();
      expect(c!.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
      expect(c!.resources.requests).toHaveProperty('cpu');
      expect(c!.resources.limits).toHaveProperty('memory');

      // Configuration: its own ConfigMap, secrets by reference only.
      const configName = c!.envFrom?.[0]?.configMapRef.name;
      const config = named(objs, 'ConfigMap', configName!).data!;
      for (const e of c!.env ?? []) {
        expect(e.value, `${s.name} ${e.name} must come from a Secret`).toBeUndefined();
        expect(['gateway-database', 'gateway-providers', `${PREFIX}-service-token`]).toContain(e.valueFrom!.secretKeyRef.name);
      }
      expect((c!.env ?? []).some((e) => e.name === 'DATABASE_URL')).toBe(s.database);
      expect(config.MIGRATE_ON_START).toBe(s.database ? 'false' : undefined);
      expect([config.GRPC_HOST, config.GRPC_PORT]).toEqual(s.protocol === 'grpc' ? ['0.0.0.0', String(s.port)] : [undefined, undefined]);

      // Drain: preStop sleep, then the service's own shutdown, inside the grace period.
      const sleep = c!.lifecycle?.preStop.sleep?.seconds ?? 0;
      expect(sleep).toBeGreaterThan(0);
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(sleep + Number(config.SHUTDOWN_TIMEOUT_MS) / 1000);

      // Autoscaler, disruption budget and Service all select these pods.
      const hpa = named(objs, 'HorizontalPodAutoscaler', name);
      expect(hpa.spec.scaleTargetRef.name).toBe(name);
      expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
      expect(d.spec.replicas, 'no replicas next to an autoscaler').toBeUndefined();
      expect(selects(named(objs, 'PodDisruptionBudget', name).spec.selector!.matchLabels, labels)).toBe(true);
      const service = named(objs, 'Service', name);
      expect(selects(service.spec.selector as Record<string, string>, labels)).toBe(true);
      for (const p of service.spec.ports) expect(c!.ports?.map((x) => x.name)).toContain(p.targetPort);
    }

    // The gateway reaches every gRPC service through its headless Service (every pod's address,
    // balanced round-robin by the gateway itself), at the Service's port.
    const gatewayConfig = named(objs, 'ConfigMap', `${PREFIX}-edge-gateway`).data!;
    for (const callee of facts('edge-gateway').calls) {
      const variable = `${callee.toUpperCase().replaceAll('-', '_')}_ADDR`;
      const service = named(objs, 'Service', `${PREFIX}-${callee}`);
      const headless = named(objs, 'Service', `${PREFIX}-${callee}-headless`);
      expect((headless.spec as { clusterIP?: string }).clusterIP).toBe('None');
      expect(headless.spec.selector).toEqual(service.spec.selector);
      expect(headless.spec.ports[0]!.port).toBe(service.spec.ports[0]!.port);
      expect(gatewayConfig[variable]).toBe(`dns:///${PREFIX}-${callee}-headless.${NAMESPACE}.svc:${service.spec.ports[0]!.port}`);
    }
    // Without client-side balancing, through the ClusterIP Service as before.
    const plain = named(render(nested({ 'grpc.clientLoadBalancing': false })), 'ConfigMap', `${PREFIX}-edge-gateway`).data!;
    expect(plain.BILLING_ADDR).toBe(`${PREFIX}-billing.${NAMESPACE}.svc:50051`);
  });

  it.skipIf(!hasHelm)('turns the service token on by default: a generated Secret every service reads SERVICE_TOKEN from; an existing one instead; off on request', () => {
    const objs = render();
    const secret = named(objs, 'Secret', `${PREFIX}-service-token`);
    expect(secret.metadata.annotations).toMatchObject({ 'helm.sh/resource-policy': 'keep' });
    expect(Buffer.from(secret.data!.SERVICE_TOKEN!, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    const tokenOf = (list: K8sObject[], name: string) => named(list, 'Deployment', `${PREFIX}-${name}`).spec.template.spec.containers[0]!.env?.find((e) => e.name === 'SERVICE_TOKEN');
    for (const s of SERVICES.filter((x) => !x.optional)) {
      expect({ s: s.name, ref: tokenOf(objs, s.name)?.valueFrom?.secretKeyRef }).toMatchObject({ s: s.name, ref: { name: `${PREFIX}-service-token`, key: 'SERVICE_TOKEN' } });
    }
    const own = render(nested({ 'serviceToken.existingSecret': 'my-token', 'serviceToken.key': 'TOKEN' }));
    expect(own.find((o) => o.kind === 'Secret' && o.metadata.name === `${PREFIX}-service-token`)).toBeUndefined();
    expect(tokenOf(own, 'billing')?.valueFrom?.secretKeyRef).toMatchObject({ name: 'my-token', key: 'TOKEN' });
    const off = render(nested({ 'serviceToken.enabled': false }));
    expect(tokenOf(off, 'billing')).toBeUndefined();
    expect(off.find((o) => o.kind === 'Secret' && o.metadata.name === `${PREFIX}-service-token`)).toBeUndefined();
  });

  it.skipIf(!hasHelm)('renders one migration hook Job per schema, from the service image, before install and upgrade', () => {
    const objs = render();
    const jobs = ofKind(objs, 'Job');
    const owners = SERVICES.filter((s) => s.database && !s.optional);
    expect(jobs.map((j) => j.metadata.name).sort()).toEqual(owners.map((s) => `${PREFIX}-${s.name}-migrate`).sort());
    for (const s of owners) {
      const job = named(objs, 'Job', `${PREFIX}-${s.name}-migrate`);
      expect(job.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '-5', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' });
      const [c] = job.spec.template.spec.containers;
      expect(c!.command).toEqual(['node', 'dist/migrate.js']);
      expect(c!.image).toBe(named(objs, 'Deployment', `${PREFIX}-${s.name}`).spec.template.spec.containers[0]!.image);
      expect(c!.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef.name).toBe('gateway-database');
      expect(c!.envFrom).toBeUndefined();
    }
  });

  it.skipIf(!hasHelm)('renders network policies: default deny, each gRPC service open to its callers only', () => {
    const objs = render();
    const deny = named(objs, 'NetworkPolicy', `${PREFIX}-default-deny`);
    expect(deny.spec.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'generation-gateway', 'app.kubernetes.io/instance': RELEASE });
    expect(deny.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(deny.spec.ingress).toBeUndefined();
    expect(deny.spec.egress).toBeUndefined();
    const from = (name: string) => componentsOf(named(objs, 'NetworkPolicy', `${PREFIX}-${name}`).spec.ingress?.flatMap((r) => r.from ?? []));
    // admin-cli: the operator CLI run in the cluster (networkPolicy.allowAdminCli).
    expect(from('billing')).toEqual(['admin-cli', 'edge-gateway', 'video-jobs']);
    expect(from('catalog')).toEqual(['admin-cli', 'edge-gateway', 'text']);
    for (const name of ['text', 'media', 'video-jobs']) expect(from(name)).toEqual(['edge-gateway']);
    const to = (name: string) => componentsOf(named(objs, 'NetworkPolicy', `${PREFIX}-${name}`).spec.egress?.flatMap((r) => r.to ?? []));
    expect(to('edge-gateway')).toEqual(['billing', 'catalog', 'media', 'text', 'video-jobs']);
    expect(to('video-jobs')).toEqual(['billing']);
    for (const p of ofKind(objs, 'NetworkPolicy').filter((x) => x.spec.egress)) {
      expect(p.spec.egress!.some((r) => r.ports.some((port) => port.port === 53)), `${p.metadata.name} reaches DNS`).toBe(true);
    }
  });

  it.skipIf(!hasHelm)('lets the operator CLI run in the cluster reach billing, catalog and the console only; off with allowAdminCli=false', () => {
    const objs = render(nested({ 'console.enabled': true }));
    const admin = named(objs, 'NetworkPolicy', `${PREFIX}-admin-cli`);
    expect(admin.spec.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'generation-gateway', 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/component': 'admin-cli' });
    expect(admin.spec.ingress).toBeUndefined();
    expect(componentsOf(admin.spec.egress?.flatMap((r) => r.to ?? []))).toEqual(['billing', 'catalog', 'console']);
    // To the console, its operator port only (never the pages' port).
    const toConsole = admin.spec.egress!.find((r) => componentsOf(r.to).includes('console'))!;
    expect(toConsole.ports.map((p) => p.port)).toEqual(['admin']);
    const off = render(nested({ 'console.enabled': true, 'networkPolicy.allowAdminCli': false }));
    expect(off.find((o) => o.metadata.name === `${PREFIX}-admin-cli`)).toBeUndefined();
    const from = (name: string) => componentsOf(named(off, 'NetworkPolicy', `${PREFIX}-${name}`).spec.ingress?.flatMap((r) => r.from ?? []));
    expect(from('billing')).toEqual(['console', 'edge-gateway', 'video-jobs']);
  });

  it.skipIf(!hasHelm)('the day-1 seeding Job (deploy/admin-seed-job.yaml) reaches the services of a release named gateway, and its policy admits it', () => {
    const r = helm(['template', 'gateway', chart, '-n', 'gateway', '--kube-version', KUBE_VERSION]);
    expect(r.status, `${r.stderr}`).toBe(0);
    const objs = parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
    const job = parse(read(DEPLOY, 'admin-seed-job.yaml')) as K8sObject;
    const pod = job.spec.template;
    const policy = named(objs, 'NetworkPolicy', 'gateway-generation-gateway-admin-cli');
    expect(selects(policy.spec.podSelector.matchLabels, pod.metadata.labels)).toBe(true);
    const env = Object.fromEntries(pod.spec.containers[0]!.env!.map((e) => [e.name, e.value]));
    for (const [variable, service] of [['BILLING_ADDR', 'billing'], ['CATALOG_ADDR', 'catalog']] as const) {
      const svc = named(objs, 'Service', `gateway-generation-gateway-${service}`);
      expect(env[variable]).toBe(`${svc.metadata.name}:${svc.spec.ports.find((p) => p.name === 'grpc')!.port}`);
    }
    // The billing and catalog policies admit pods with these labels.
    for (const service of ['billing', 'catalog']) {
      const ingress = named(objs, 'NetworkPolicy', `gateway-generation-gateway-${service}`).spec.ingress!.flatMap((x) => x.from ?? []);
      expect(ingress.some((peer) => peer.podSelector && selects(peer.podSelector.matchLabels, pod.metadata.labels))).toBe(true);
    }
    // `admin user create` goes to the console's operator port, which admits these labels.
    const rc = helm(['template', 'gateway', chart, '-n', 'gateway', '--kube-version', KUBE_VERSION, '--set', 'console.enabled=true']);
    expect(rc.status, `${rc.stderr}`).toBe(0);
    const withConsole = parseAllDocuments(rc.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
    const consoleSvc = named(withConsole, 'Service', 'gateway-generation-gateway-console');
    const adminPort = consoleSvc.spec.ports.find((p) => p.name === 'admin')!.port;
    expect(env.CONSOLE_URL).toBe(`http://gateway-generation-gateway-console:${adminPort}`);
    const tokenRef = pod.spec.containers[0]!.env!.find((e) => e.name === 'CONSOLE_ADMIN_TOKEN')?.valueFrom?.secretKeyRef;
    expect(tokenRef).toMatchObject({ name: 'gateway-console', key: 'CONSOLE_ADMIN_TOKEN' });
    const consoleRules = named(withConsole, 'NetworkPolicy', 'gateway-generation-gateway-console').spec.ingress!;
    const adminRule = consoleRules.find((rule) => rule.ports?.some((p) => p.port === 'admin'))!;
    expect(adminRule.from!.some((peer) => peer.podSelector && selects(peer.podSelector.matchLabels, pod.metadata.labels))).toBe(true);
    expect(pod.spec.containers[0]!.image).toMatch(/\/admin-cli:/);
  });

  it.skipIf(!hasHelm)("stamps events with the release's deployment id, so releases sharing NATS never take each other's events", () => {
    const objs = render();
    for (const s of SERVICES.filter((x) => !x.optional)) {
      expect({ s: s.name, id: named(objs, 'ConfigMap', `${PREFIX}-${s.name}`).data!.DEPLOYMENT_ID }).toEqual({ s: s.name, id: `${NAMESPACE}/${RELEASE}` });
    }
    expect(named(render(nested({ 'events.deploymentId': 'eu-prod' })), 'ConfigMap', `${PREFIX}-billing`).data!.DEPLOYMENT_ID).toBe('eu-prod');
  });

  it.skipIf(!hasHelm)('renders everything enabled: console, simulator as providers, Ingress, ServiceMonitors', () => {
    const objs = render(nested(EVERYTHING_ENABLED));
    expect(ofKind(objs, 'Deployment')).toHaveLength(SERVICES.length);
    expect(ofKind(objs, 'Job')).toHaveLength(SERVICES.filter((s) => s.database).length);
    const monitors = ofKind(objs, 'ServiceMonitor');
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(SERVICES.filter((s) => s.name !== 'provider-simulator').map((s) => `${PREFIX}-${s.name}`).sort());
    for (const m of monitors) {
      expect(m.metadata.labels?.release).toBe('prometheus');
      expect(m.spec.endpoints[0]!.port).toBe('metrics');
    }

    // The API on its host, the console on a host of its own (never beside the API's prefix).
    const ingress = ofKind(objs, 'Ingress');
    expect(ingress).toHaveLength(1);
    const routes = ingress[0]!.spec.rules.map((r) => [r.host, ...r.http.paths.map((p) => `${p.path} -> ${p.backend.service.name}:${p.backend.service.port.name}`)]);
    expect(routes).toEqual([
      ['api.example.com', `/api/v1 -> ${PREFIX}-edge-gateway:http`],
      ['console.example.com', `/ -> ${PREFIX}-console:http`],
    ]);
    expect(ingress[0]!.spec.tls).toEqual([
      { secretName: 'api-tls', hosts: ['api.example.com'] },
      { secretName: `${PREFIX}-console-tls`, hosts: ['console.example.com'] },
    ]);
    expect(named(objs, 'ConfigMap', `${PREFIX}-console`).data!.CONSOLE_PUBLIC_URL).toBe('https://console.example.com');
    expect(named(objs, 'ConfigMap', `${PREFIX}-edge-gateway`).data!.PUBLIC_BASE_PATH).toBe('/api/v1');

    // The simulator serves as every provider; nothing reads a providers Secret.
    const simulator = `http://${PREFIX}-provider-simulator.${NAMESPACE}.svc:8090/`;
    for (const name of ['catalog', 'text', 'media', 'video-jobs']) {
      const providers = JSON.parse(named(objs, 'ConfigMap', `${PREFIX}-${name}`).data!.PROVIDERS!) as Array<{ baseUrl: string }>;
      expect(providers.every((p) => p.baseUrl.startsWith(simulator)), `${name}`).toBe(true);
      const c = named(objs, 'Deployment', `${PREFIX}-${name}`).spec.template.spec.containers[0]!;
      expect(c.env?.find((e) => e.name === 'NATS_URL')?.valueFrom?.secretKeyRef.name).toBe('gateway-nats');
      expect(c.env?.some((e) => e.name === 'PROVIDERS')).toBe(false);
      const egress = named(objs, 'NetworkPolicy', `${PREFIX}-${name}`).spec.egress!;
      expect(componentsOf(egress.flatMap((r) => r.to ?? []))).toContain('provider-simulator');
    }
    const console = named(objs, 'Deployment', `${PREFIX}-console`).spec.template.spec.containers[0]!;
    expect(console.env?.map((e) => `${e.name}<-${e.valueFrom?.secretKeyRef.name}`).sort()).toEqual(['DATABASE_URL<-gateway-database', `SERVICE_TOKEN<-${PREFIX}-service-token`, 'SESSION_SECRET<-gateway-console']);
    // The operator endpoint's token comes from a Secret when one is named (it is off otherwise).
    const withToken = render(nested({ ...EVERYTHING_ENABLED, 'console.adminToken.existingSecret': 'gateway-console' }));
    const tokenEnv = named(withToken, 'Deployment', `${PREFIX}-console`).spec.template.spec.containers[0]!.env?.find((e) => e.name === 'CONSOLE_ADMIN_TOKEN');
    expect(tokenEnv?.valueFrom?.secretKeyRef).toEqual({ name: 'gateway-console', key: 'CONSOLE_ADMIN_TOKEN' });
    // Behind the chart's ingress the sign-in limit counts the address the ingress saw, not the ingress.
    expect(named(objs, 'ConfigMap', `${PREFIX}-console`).data!.CONSOLE_TRUST_PROXY).toBe('uniquelocal');
    const from = (name: string) => componentsOf(named(objs, 'NetworkPolicy', `${PREFIX}-${name}`).spec.ingress?.flatMap((r) => r.from ?? []));
    expect(from('billing')).toEqual(['admin-cli', 'console', 'edge-gateway', 'video-jobs']);
    expect(from('catalog')).toEqual(['admin-cli', 'console', 'edge-gateway', 'text']);
    expect(from('console')).toEqual(['admin-cli']);
    expect(from('provider-simulator')).toEqual(['catalog', 'media', 'text', 'video-jobs']);
    for (const cm of ofKind(objs, 'ConfigMap')) {
      if (cm.metadata.name.endsWith('provider-simulator')) continue;
      expect(cm.data!.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector.observability:4318');
      expect(cm.data!.NATS_URL).toBeUndefined();
    }
  });

  it.skipIf(!hasHelm)("serves the console on its own host: TLS from the operator's block when it names the host, else its own Secret; plain http without TLS; an explicit publicUrl wins", () => {
    const base = { ...EVERYTHING_ENABLED, 'ingress.hosts': ['api.example.com', 'api.example.org'] };
    const shared = render(nested({ ...base, 'ingress.tls': [{ secretName: 'wildcard-tls', hosts: ['api.example.com', 'console.example.com'] }] }));
    const ingress = named(shared, 'Ingress', PREFIX);
    expect(ingress.spec.tls).toEqual([{ secretName: 'wildcard-tls', hosts: ['api.example.com', 'console.example.com'] }]);
    expect(ingress.spec.rules.map((r) => r.host)).toEqual(['api.example.com', 'api.example.org', 'console.example.com']);
    for (const rule of ingress.spec.rules) {
      const backends = rule.http.paths.map((p) => p.backend.service.name);
      expect(backends, `${rule.host}`).toEqual([rule.host === 'console.example.com' ? `${PREFIX}-console` : `${PREFIX}-edge-gateway`]);
      // The operator endpoints are on the console's admin port, which no rule routes.
      expect(rule.http.paths.map((p) => p.backend.service.port.name)).toEqual(['http']);
    }
    expect(JSON.stringify(ingress.spec)).not.toContain('/internal');
    const ownSecret = render(nested({ ...base, 'console.ingress.tlsSecretName': 'console-cert' }));
    expect(named(ownSecret, 'Ingress', PREFIX).spec.tls).toContainEqual({ secretName: 'console-cert', hosts: ['console.example.com'] });
    const plain = render(nested({ ...base, 'ingress.tls': [] }));
    expect(named(plain, 'Ingress', PREFIX).spec.tls).toBeUndefined();
    expect(named(plain, 'ConfigMap', `${PREFIX}-console`).data!.CONSOLE_PUBLIC_URL).toBe('http://console.example.com');
    const own = render(nested({ ...base, 'console.publicUrl': 'https://dashboard.example.net' }));
    expect(named(own, 'ConfigMap', `${PREFIX}-console`).data!.CONSOLE_PUBLIC_URL).toBe('https://dashboard.example.net');
    // Without the console the Ingress routes the API only.
    const apiOnly = render(nested({ ...base, 'console.enabled': false }));
    expect(named(apiOnly, 'Ingress', PREFIX).spec.rules.map((r) => r.host)).toEqual(['api.example.com', 'api.example.org']);
    expect(named(apiOnly, 'Ingress', PREFIX).spec.tls).toEqual([{ secretName: 'api-tls', hosts: ['api.example.com'] }]);
  });

  it.skipIf(!hasHelm)("serves the console's operator endpoints (/internal/*) on a port of their own that only the operator CLI's pods may reach", () => {
    for (const ingressFrom of [undefined, []]) {
      // An empty networkPolicy.ingressFrom opens the pages' port to every source; never the admin port.
      const objs = render(nested({ ...EVERYTHING_ENABLED, ...(ingressFrom ? { 'networkPolicy.ingressFrom': ingressFrom } : {}) }));
      const config = named(objs, 'ConfigMap', `${PREFIX}-console`).data!;
      expect([config.CONSOLE_PORT, config.CONSOLE_ADMIN_PORT]).toEqual(['8081', '8082']);
      const c = named(objs, 'Deployment', `${PREFIX}-console`).spec.template.spec.containers[0]!;
      expect(c.ports?.find((p) => p.name === 'admin')?.containerPort).toBe(8082);
      // Probes stay on the pages' port.
      expect([c.startupProbe, c.readinessProbe, c.livenessProbe].map((p) => p?.httpGet?.port)).toEqual(['http', 'http', 'http']);
      expect(named(objs, 'Service', `${PREFIX}-console`).spec.ports).toContainEqual(expect.objectContaining({ name: 'admin', port: 8082, targetPort: 'admin' }));
      const rules = named(objs, 'NetworkPolicy', `${PREFIX}-console`).spec.ingress!;
      const adminRules = rules.filter((r) => r.ports?.some((p) => p.port === 'admin' || p.port === 8082));
      expect(adminRules).toHaveLength(1);
      expect(adminRules[0]!.ports).toEqual([{ port: 'admin', protocol: 'TCP' }]);
      expect(adminRules[0]!.from).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'generation-gateway', 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/component': 'admin-cli' } } }]);
      // The public rule (ingress controller, or everyone) is for the pages' port only.
      const publicRule = rules.find((r) => r.ports?.some((p) => p.port === 'http'))!;
      expect(publicRule.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
      // The Ingress routes the pages' port only.
      const backends = named(objs, 'Ingress', PREFIX).spec.rules.flatMap((r) => r.http.paths.map((p) => p.backend.service.port.name));
      expect(new Set(backends)).toEqual(new Set(['http']));
    }
    // Without allowAdminCli nothing may reach the admin port.
    const closed = render(nested({ 'console.enabled': true, 'networkPolicy.allowAdminCli': false }));
    const closedRules = named(closed, 'NetworkPolicy', `${PREFIX}-console`).spec.ingress!;
    expect(closedRules.filter((r) => r.ports?.some((p) => p.port === 'admin'))).toEqual([]);
    // Another port on request.
    const moved = render(nested({ 'console.enabled': true, 'console.adminPort': 9000 }));
    expect(named(moved, 'ConfigMap', `${PREFIX}-console`).data!.CONSOLE_ADMIN_PORT).toBe('9000');
    expect(named(moved, 'Service', `${PREFIX}-console`).spec.ports).toContainEqual(expect.objectContaining({ name: 'admin', port: 9000 }));
  });

  it.skipIf(!hasHelm)('refuses invalid values (schema) and inconsistent ones (template checks)', () => {
    const cases: Array<[string[], string]> = [
      [['--set', 'gateway.publicBasePath=v1/'], 'publicBasePath'],
      [['--set', 'billing.replicaCount=-1'], 'replicaCount'],
      [['--set', 'providers.existingSecret='], 'providers.existingSecret is required'],
      [['--set', 'gateway.autoscaling.minReplicas=5', '--set', 'gateway.autoscaling.maxReplicas=3'], 'minReplicas (5) is above maxReplicas (3)'],
      [['--set', 'metrics.enabled=false', '--set', 'metrics.serviceMonitor.enabled=true'], 'metrics.serviceMonitor.enabled needs metrics.enabled'],
      [['--set', 'ingress.enabled=true', '--set', 'console.enabled=true'], 'console.ingress.host is required'],
      [['--set', 'ingress.enabled=true', '--set', 'console.enabled=true', '--set', 'console.ingress.host=api.example.com'], 'console.ingress.host (api.example.com) is one of ingress.hosts'],
      [['--set', 'console.ingress.host=Console_Example'], 'console.ingress.host'],
      [['--set', 'console.adminPort=8081'], 'console.adminPort (8081) is taken'],
      [['--set', 'console.adminPort=9464'], 'console.adminPort (9464) is taken'],
    ];
    for (const [args, message] of cases) {
      const r = helm(['template', RELEASE, chart, '--kube-version', KUBE_VERSION, ...args]);
      expect(r.status, `${args.join(' ')}`).not.toBe(0);
      expect(r.stderr).toContain(message);
    }
  });

  it.skipIf(!hasHelm)('migrates at start instead when the hooks are off, and falls back to an exec preStop before Kubernetes 1.30', () => {
    const objs = render({ migrations: { enabled: false } });
    expect(ofKind(objs, 'Job')).toEqual([]);
    for (const s of SERVICES.filter((x) => x.database && !x.optional)) {
      expect(named(objs, 'ConfigMap', `${PREFIX}-${s.name}`).data!.MIGRATE_ON_START).toBe('true');
    }
    const r = helm(['template', RELEASE, chart, '--kube-version', '1.29.0']);
    expect(r.status, `${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('command: ["sleep", "5"]');
    expect(r.stdout).not.toMatch(/preStop:\s*\n\s*sleep:/);
  });
});
