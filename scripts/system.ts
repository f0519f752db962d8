import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TS_CACHE_HOOK, warmTsCache } from './ts-cache.mjs';

/**
 * Starts the whole gateway as real processes: the provider simulator, every gRPC service, the
 * edge gateway and the account dashboard (console), in dependency order. Each child reports its
 * bound address by writing a ready file, so port 0 works and "ready" means "listening". Used by `pnpm start` and the end-to-end tests.
 */

export const ROOT = resolve(import.meta.dirname, '..');

export interface SystemOptions {
  databaseUrl: string;
  natsUrl: string;
  /** Public gateway port; 0 picks a free one. */
  gatewayPort: number;
  /** Fixed ports for the internal services, or 0 for free ones (tests). */
  internalPorts: 'fixed' | 'random';
  /** Where children's logs go: 'inherit' prefixes them onto our stdout, or a folder for files. */
  logs: 'inherit' | string;
  /** Extra environment for every child (e.g. fault-injection settings in tests). */
  env?: Record<string, string>;
  /** Prefix of NATS subjects and streams, so concurrent runs sharing a NATS server stay apart. */
  eventsNamespace?: string;
  /** DEPLOYMENT_ID: stamped on events; consumers pass over those of another deployment. */
  deploymentId?: string;
  /** Deadlines of the provider adapters (tests shorten them to exercise timeouts). */
  providerTimeouts?: Record<string, number>;
  /** Per-service extra environment. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Account dashboard port; 0 picks a free one. Default: 8081 with fixed ports, else free. */
  consolePort?: number;
  /** The dashboard's session-signing secret; a new one per start without it (sessions end with the system). */
  consoleSessionSecret?: string;
  /**
   * Restart a service that dies (not one stopped through `stopService` or `stop`): its death is
   * reported with its exit code or signal, and it is started again at its address after a backoff
   * that doubles from `minBackoffMs` up to `maxBackoffMs` while it keeps dying (reset once it has
   * served for a minute). Off by default (the tests kill services on purpose).
   */
  supervise?: { report: (line: string) => void; minBackoffMs?: number; maxBackoffMs?: number };
  /** Per-service metrics port (`METRICS_PORT`): each process its own Prometheus address. */
  metricsPorts?: Partial<Record<ServiceName, number>>;
}

export type ServiceName = 'provider-simulator' | 'billing' | 'catalog' | 'text' | 'media' | 'video-jobs' | 'edge-gateway' | 'console';

const FIXED_PORTS: Record<ServiceName, number> = {
  'provider-simulator': 8090,
  billing: 50051,
  catalog: 50052,
  text: 50053,
  media: 50054,
  'video-jobs': 50055,
  'edge-gateway': 8080,
  console: 8081,
};

/** The variable each service takes its listening port from. */
const PORT_ENV: Record<ServiceName, string> = {
  'provider-simulator': 'SIM_PORT',
  billing: 'GRPC_PORT',
  catalog: 'GRPC_PORT',
  text: 'GRPC_PORT',
  media: 'GRPC_PORT',
  'video-jobs': 'GRPC_PORT',
  'edge-gateway': 'GATEWAY_PORT',
  console: 'CONSOLE_PORT',
};

/** The port of a `host:port` or a URL. */
function portOf(address: string): string {
  return address.includes('://') ? new URL(address).port : address.slice(address.lastIndexOf(':') + 1);
}

/**
 * How Node runs a service. Its sources come pre-stripped (scripts/ts-cache.mjs): Node's TypeScript
 * stripper is never loaded in a service. The young generation is left to V8 (capping it at 4 MiB
 * per semi-space cost throughput under load); what start-up grew it to is given back once by the
 * kit's collectStartupGarbage (`STARTUP_GC`), below, and what a busy spell grew once the service is
 * quiet again by its collectGarbageWhenIdle (`IDLE_GC`).
 */
const SERVICE_NODE_FLAGS = ['--import', TS_CACHE_HOOK];

/**
 * The edge gateway, text and billing (every chat and messages request passes through them) keep
 * TurboFan and Node's worker threads. Start-up grows their young generation to 2 x 16 MiB, and
 * the start-up GC gives it back, but not below 8 MiB per semi-space: shrunk to V8's 1 MiB minimum,
 * a server's request garbage (which hardly survives) never grew it again and they scavenged far
 * more often (25-30% more CPU per stream); with an 8 MiB floor, runs of the shared bench's loads
 * back to back with and without it showed the same throughput and CPU per request, at 25-50 MiB
 * less idle memory each (docs/benchmarks.md, "Idle memory", "Third pass"). glibc gets two arenas
 * (jemalloc gave back 12-17 MiB more after load but cost them 10-30 % more CPU per request:
 * docs/benchmarks.md, "Memory after load, second pass").
 */
const HOT_NODE_FLAGS = ['--min-semi-space-size=8'];
const HOT_SERVICES: Partial<Record<ServiceName, string[]>> = { 'edge-gateway': HOT_NODE_FLAGS, text: HOT_NODE_FLAGS, billing: HOT_NODE_FLAGS };
const HOT_ENV = { STARTUP_GC: 'true', IDLE_GC: 'true', MALLOC_ARENA_MAX: '2' };

/**
 * The services no chat or messages request passes through trade peak speed for memory (10-15 MiB
 * of idle RSS each; docs/benchmarks.md, "Idle memory"): no TurboFan for JavaScript (the
 * interpreter, Sparkplug and Maglev still run), one V8 worker thread, and for those that call
 * providers Liftoff only for undici's WebAssembly HTTP parser (TurboFan compiling it on the first
 * call kept 12 MiB). V8 favours size (`--optimize-for-size`: among others its heap grows less
 * between full collections; the catalog's provider sync every minute grew it from 105 to 116 MiB
 * within three minutes of start, 107 with it). glibc gets one arena, maps blocks from 16 KiB up on
 * their own and gives free memory at the top back (what start-up malloc'd and freed stayed resident
 * between live blocks), and what start-up or a busy spell grew is given back (`STARTUP_GC`,
 * `IDLE_GC`: the kit's collectStartupGarbage and collectGarbageWhenIdle). The edge gateway, text
 * and billing run as `HOT_SERVICES` says.
 */
const LEAN_NODE_FLAGS = ['--no-turbofan', '--v8-pool-size=1', '--optimize-for-size'];
const LEAN_ENV = { STARTUP_GC: 'true', IDLE_GC: 'true', MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '16384', MALLOC_TRIM_THRESHOLD_: '65536', MALLOC_TOP_PAD_: '0' };
const LEAN_SERVICES: Partial<Record<ServiceName, string[]>> = {
  catalog: [...LEAN_NODE_FLAGS, '--liftoff-only'],
  console: LEAN_NODE_FLAGS,
  media: [...LEAN_NODE_FLAGS, '--liftoff-only'],
  'video-jobs': [...LEAN_NODE_FLAGS, '--liftoff-only'],
};

/**
 * Node's flags and the memory settings of a service's environment, as above: `pnpm start` and the
 * images (deploy/Dockerfile, held to this by test/deploy) run each service with them.
 */
export function runtimeOf(name: ServiceName): { nodeFlags: string[]; env: Record<string, string> } {
  const lean = LEAN_SERVICES[name];
  if (lean) return { nodeFlags: lean, env: LEAN_ENV };
  const hot = HOT_SERVICES[name];
  if (hot) return { nodeFlags: hot, env: HOT_ENV };
  return { nodeFlags: [], env: {} };
}

/** Stop order: the gateway stops taking requests first, the simulator (the outside world) last. */
const STOP_ORDER: ServiceName[] = ['console', 'edge-gateway', 'text', 'media', 'video-jobs', 'catalog', 'billing', 'provider-simulator'];

/**
 * The provider simulator as the four upstream providers, in the `PROVIDERS` format, plus a second
 * OpenAI account (`openai-backup`) for fallback routes. `timeouts` overrides the adapters' deadlines.
 */
export function simulatorProviders(simulatorUrl: string, timeouts?: Record<string, number>): string {
  const t = timeouts ? { timeouts } : {};
  return JSON.stringify([
    { name: 'openai', kind: 'openai', baseUrl: `${simulatorUrl}/openai/v1`, apiKey: 'sim-openai-key', ...t },
    { name: 'openai-backup', kind: 'openai', baseUrl: `${simulatorUrl}/openai/v1`, apiKey: 'sim-openai-key', ...t },
    { name: 'anthropic', kind: 'anthropic', baseUrl: `${simulatorUrl}/anthropic`, apiKey: 'sim-anthropic-key', ...t },
    { name: 'google', kind: 'google', baseUrl: `${simulatorUrl}/google/v1beta`, apiKey: 'sim-google-key', ...t },
    { name: 'compat', kind: 'compat', baseUrl: `${simulatorUrl}/compat/v1`, apiKey: 'sim-compat-key', ...t },
  ]);
}

export interface RunningService {
  name: ServiceName;
  child: ChildProcess;
  /** `host:port` for gRPC services, base URL for HTTP ones. */
  address: string;
  logFile?: string;
}

export interface RunningSystem {
  /** Public base URL, e.g. http://127.0.0.1:8080/v1 */
  baseUrl: string;
  /** The database every service of this system keeps its schema in. */
  databaseUrl: string;
  simulatorUrl: string;
  billingAddr: string;
  catalogAddr: string;
  textAddr: string;
  mediaAddr: string;
  videoJobsAddr: string;
  /** Account dashboard, e.g. http://127.0.0.1:8081 */
  consoleUrl: string;
  /** Bearer token of the dashboard's operator endpoint (`pnpm admin user create`), made per start. */
  consoleAdminToken: string;
  services: Map<ServiceName, RunningService>;
  /** Stops one service (SIGTERM, then SIGKILL after the grace period) and resolves on exit. */
  stopService(name: ServiceName): Promise<void>;
  /** Starts a stopped service again with the same settings. */
  restartService(name: ServiceName): Promise<void>;
  /** Starts another gateway replica on a free port (stopped with the system); resolves with its base URL. */
  addGateway(): Promise<string>;
  stop(): Promise<void>;
}

function childEnv(opts: SystemOptions, name: ServiceName, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: process.env.NODE_ENV ?? 'development',
    ...runtimeOf(name).env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    // Passed on so that a service can be profiled as it runs (`NODE_OPTIONS=--cpu-prof pnpm start`).
    ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}),
    DATABASE_URL: opts.databaseUrl,
    NATS_URL: opts.natsUrl,
    MIGRATE_ON_START: 'true',
    EVENTS_NAMESPACE: opts.eventsNamespace ?? '',
    DEPLOYMENT_ID: opts.deploymentId ?? '',
    ...opts.env,
    ...extra,
    ...opts.serviceEnv?.[name],
  };
}

function pipeLines(stream: NodeJS.ReadableStream, prefix: string): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    let i = buf.indexOf('\n');
    while (i >= 0) {
      process.stdout.write(`${prefix} ${buf.slice(0, i)}\n`);
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
    }
  });
}

/** Resolves with what a child wrote to its ready file (its address) once it serves; fails if it exits first. */
export async function waitForReadyFile(file: string, child: ChildProcess, name: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited during start-up (code ${child.exitCode ?? child.signalCode})`);
    }
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8').trim();
      if (text !== '') return text;
    }
    await sleep(50);
  }
  throw new Error(`${name} was not ready within ${timeoutMs} ms`);
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

export async function startSystem(opts: SystemOptions): Promise<RunningSystem> {
  const runDir = mkdtempSync(join(tmpdir(), 'gw-run-'));
  warmTsCache();
  const services = new Map<ServiceName, RunningService>();
  const specs = new Map<ServiceName, () => Record<string, string>>();
  const port = (name: ServiceName) => String(opts.internalPorts === 'fixed' ? FIXED_PORTS[name] : 0);

  /**
   * Starts one process of a service; `instance` names extra replicas (their own ready and log
   * files). `overrides` win over the service's settings (a restart keeps its port).
   */
  async function launch(name: ServiceName, instance: string = name, overrides: Record<string, string> = {}): Promise<RunningService> {
    const readyFile = join(runDir, `${instance}.ready`);
    const metricsPort = instance === name ? opts.metricsPorts?.[name] : undefined;
    const extra = { ...specs.get(name)!(), READY_FILE: readyFile, ...(metricsPort ? { METRICS_PORT: String(metricsPort) } : {}), ...overrides };
    const entry = join(ROOT, 'services', name, 'src', 'main.ts');
    // A log file is the child's own stdout and stderr (a descriptor it inherits): its lines go
    // straight to the file, never through this process, which would otherwise copy every access
    // line of every request (measured: ~0.1 ms of this process's CPU per request under load).
    const logFile = opts.logs === 'inherit' ? undefined : join(opts.logs, `${instance}.log`);
    const logFd = logFile === undefined ? undefined : openSync(logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [...runtimeOf(name).nodeFlags, ...SERVICE_NODE_FLAGS, entry], {
        cwd: ROOT,
        env: childEnv(opts, name, extra),
        stdio: logFd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', logFd, logFd],
      });
    } finally {
      // The child holds its own copy of the descriptor.
      if (logFd !== undefined) closeSync(logFd);
    }
    spawned.add(child);
    child.once('exit', () => spawned.delete(child));
    if (logFile === undefined) {
      pipeLines(child.stdout!, `[${name}]`);
      pipeLines(child.stderr!, `[${name}]`);
    }
    const address = await waitForReadyFile(readyFile, child, instance, 60_000).catch((err: unknown) => {
      child.kill('SIGKILL');
      const hint = logFile ? `\n--- ${instance} log ---\n${readFileSync(logFile, 'utf8').slice(-4000)}` : '';
      throw new Error(`${(err as Error).message}${hint}`);
    });
    const svc: RunningService = { name, child, address, ...(logFile ? { logFile } : {}) };
    if (instance === name) {
      services.set(name, svc);
      if (opts.supervise) child.once('exit', (code, signal) => void supervise(svc, code, signal));
    } else extras.push(svc);
    return svc;
  }

  /** Starts a service again at its old address, as a rolling update's successor would be: its clients reconnect there. */
  async function relaunch(name: ServiceName): Promise<RunningService> {
    const readyFile = join(runDir, `${name}.ready`);
    if (existsSync(readyFile)) rmSync(readyFile);
    const previous = services.get(name)?.address;
    return launch(name, name, previous === undefined ? {} : { [PORT_ENV[name]]: portOf(previous) });
  }

  /** Services stopped on purpose (`stopService`, `stop`): their exit is not a death. */
  const held = new Set<ServiceName>();
  let stopping = false;
  const backoff = new Map<ServiceName, { ms: number; since: number }>();

  /** Reports a death and brings the service back with backoff, until it serves or the system stops. */
  async function supervise(svc: RunningService, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const sup = opts.supervise!;
    if (stopping || held.has(svc.name) || services.get(svc.name) !== svc) return;
    const min = sup.minBackoffMs ?? 500;
    const max = sup.maxBackoffMs ?? 30_000;
    const diedAt = Date.now();
    const log = svc.logFile ? ` (log: ${svc.logFile})` : '';
    sup.report(`${svc.name} (pid ${svc.child.pid}) died: ${code !== null ? `exit code ${code}` : `signal ${signal}`}${log}`);
    for (;;) {
      const last = backoff.get(svc.name);
      // A service that served for a minute starts over from the shortest wait.
      const ms = last && diedAt - last.since < 60_000 ? Math.min(last.ms * 2, max) : min;
      backoff.set(svc.name, { ms, since: diedAt });
      sup.report(`restarting ${svc.name} in ${(ms / 1000).toFixed(1)} s`);
      await sleep(ms);
      if (stopping || held.has(svc.name)) return;
      try {
        const back = await relaunch(svc.name);
        backoff.set(svc.name, { ms, since: Date.now() });
        sup.report(`${svc.name} is back at ${back.address} (pid ${back.child.pid}), ${((Date.now() - diedAt) / 1000).toFixed(1)} s after it died`);
        return;
      } catch (err) {
        if (stopping || held.has(svc.name)) return;
        sup.report(`${svc.name} failed to start again: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  }
  const extras: RunningService[] = [];
  /** Every child still alive, ready or not: a start-up that fails stops the siblings it launched too. */
  const spawned = new Set<ChildProcess>();

  const system: RunningSystem = {
    baseUrl: '',
    databaseUrl: opts.databaseUrl,
    simulatorUrl: '',
    billingAddr: '',
    catalogAddr: '',
    textAddr: '',
    mediaAddr: '',
    videoJobsAddr: '',
    consoleUrl: '',
    consoleAdminToken: randomBytes(32).toString('base64url'),
    services,
    async stopService(name) {
      held.add(name);
      const svc = services.get(name);
      if (svc) await stopChild(svc.child, 15_000);
    },
    async restartService(name) {
      await relaunch(name);
      held.delete(name);
    },
    async addGateway() {
      const original = specs.get('edge-gateway')!;
      specs.set('edge-gateway', () => ({ ...original(), GATEWAY_PORT: '0' }));
      try {
        return (await launch('edge-gateway', `edge-gateway-${extras.length + 2}`)).address;
      } finally {
        specs.set('edge-gateway', original);
      }
    },
    async stop() {
      stopping = true;
      for (const svc of extras.splice(0)) await stopChild(svc.child, 15_000);
      for (const name of STOP_ORDER) {
        const svc = services.get(name);
        if (svc) await stopChild(svc.child, 15_000);
      }
      for (const child of spawned) await stopChild(child, 15_000);
    },
  };

  try {
    specs.set('provider-simulator', () => ({ SIM_HOST: '127.0.0.1', SIM_PORT: port('provider-simulator') }));
    system.simulatorUrl = (await launch('provider-simulator')).address;

    const providers = process.env.PROVIDERS ?? simulatorProviders(system.simulatorUrl, opts.providerTimeouts);
    const grpc = (name: ServiceName, extra: Record<string, string> = {}) =>
      specs.set(name, () => ({ GRPC_HOST: '127.0.0.1', GRPC_PORT: port(name), ...extra }));
    // A local system: alert webhooks may go to loopback receivers (production allows public https only).
    grpc('billing', { ALERT_WEBHOOK_ALLOW_LOOPBACK: 'true' });
    grpc('catalog', { PROVIDERS: providers });
    const [billing, catalog] = await Promise.all([launch('billing'), launch('catalog')]);
    system.billingAddr = billing.address;
    system.catalogAddr = catalog.address;

    // The catalog tells text which routes live models use (the others are not probed).
    grpc('text', { PROVIDERS: providers, CATALOG_ADDR: system.catalogAddr });
    grpc('media', { PROVIDERS: providers });
    grpc('video-jobs', { PROVIDERS: providers, BILLING_ADDR: system.billingAddr });
    // The dashboard over plain http on loopback, hence cookies without `Secure`.
    const consoleSecret = opts.consoleSessionSecret ?? randomBytes(32).toString('base64url');
    specs.set('console', () => ({
      CONSOLE_HOST: '127.0.0.1',
      CONSOLE_PORT: String(opts.consolePort ?? port('console')),
      BILLING_ADDR: system.billingAddr,
      CATALOG_ADDR: system.catalogAddr,
      SESSION_SECRET: consoleSecret,
      CONSOLE_ADMIN_TOKEN: system.consoleAdminToken,
      CONSOLE_INSECURE_COOKIES: 'true',
    }));
    const [text, media, videoJobs, consoleSvc] = await Promise.all([launch('text'), launch('media'), launch('video-jobs'), launch('console')]);
    system.textAddr = text.address;
    system.mediaAddr = media.address;
    system.videoJobsAddr = videoJobs.address;
    system.consoleUrl = consoleSvc.address;

    specs.set('edge-gateway', () => ({
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(opts.gatewayPort),
      BILLING_ADDR: system.billingAddr,
      CATALOG_ADDR: system.catalogAddr,
      TEXT_ADDR: system.textAddr,
      MEDIA_ADDR: system.mediaAddr,
      VIDEO_JOBS_ADDR: system.videoJobsAddr,
    }));
    system.baseUrl = (await launch('edge-gateway')).address;
  } catch (err) {
    await system.stop();
    throw err;
  }
  return system;
}
