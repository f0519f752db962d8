import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { freePort } from '../../scripts/ports.ts';
import { ROOT } from '../../scripts/system.ts';

const run = promisify(execFile);
const START = join(ROOT, 'scripts/start.ts');

/** `pnpm start` as a user runs it, with the given environment on top of ours (no EVENTS_NAMESPACE). */
function start(env: Record<string, string>): ChildProcess {
  const base = { ...process.env };
  delete base.EVENTS_NAMESPACE;
  return spawn(process.execPath, [START], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Resolves with stdout, stderr and the exit code once the process ends. */
function finished(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) => child.once('close', (code) => done({ code, stdout, stderr })));
}

function listen(port = 0): Promise<Server> {
  return new Promise((done) => {
    const s = createServer();
    s.listen({ port, host: '127.0.0.1' }, () => done(s));
  });
}

const env = () => ({ DATABASE_URL: inject('databaseUrl'), NATS_URL: inject('natsUrl'), GW_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-start-')) });

describe('pnpm start refuses a port it cannot have, before starting anything', () => {

  it('names the variable of a port in use, in one line, without a stack trace', async () => {
    const taken = await listen();
    const port = (taken.address() as { port: number }).port;
    try {
      const began = Date.now();
      const out = await finished(start({ ...env(), GATEWAY_PORT: String(await freePort()), CONSOLE_PORT: String(port) }));
      expect(out.code).toBe(1);
      expect(out.stderr).toBe(`[start] CONSOLE_PORT=${port} is in use; set CONSOLE_PORT to a free port\n`);
      expect(out.stdout).toBe('');
      // Nothing was started: it answers as soon as Node has loaded the script.
      expect(Date.now() - began).toBeLessThan(15_000);
    } finally {
      taken.close();
    }
  });

  it('refuses the gateway port the same way, a port given twice, and a value that is not a port', async () => {
    const taken = await listen();
    const port = (taken.address() as { port: number }).port;
    try {
      const busy = await finished(start({ ...env(), GATEWAY_PORT: String(port), CONSOLE_PORT: String(await freePort()) }));
      expect(busy.stderr).toBe(`[start] GATEWAY_PORT=${port} is in use; set GATEWAY_PORT to a free port\n`);
    } finally {
      taken.close();
    }
    const same = String(await freePort());
    const twice = await finished(start({ ...env(), GATEWAY_PORT: same, CONSOLE_PORT: same }));
    expect(twice.code).toBe(1);
    expect(twice.stderr).toBe(`[start] CONSOLE_PORT=${same} is the same port as GATEWAY_PORT; set CONSOLE_PORT to another free port\n`);
    const word = await finished(start({ ...env(), GATEWAY_PORT: 'http', CONSOLE_PORT: String(await freePort()) }));
    expect(word.code).toBe(1);
    expect(word.stderr).toBe('[start] GATEWAY_PORT=http is not a port number (1-65535); set GATEWAY_PORT to a free port\n');
  });
});

/** Reads the child's stdout until `until` matches; fails with what it printed after `ms`. */
function waitFor(child: ChildProcess, out: { text: string }, until: RegExp, ms: number): Promise<RegExpMatchArray> {
  return new Promise((done, fail) => {
    const check = () => {
      const m = out.text.match(until);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        done(m);
      }
    };
    const timer = setTimeout(() => {
      child.stdout!.off('data', check);
      fail(new Error(`not seen within ${ms} ms: ${until}\n--- stdout ---\n${out.text}`));
    }, ms);
    child.stdout!.on('data', check);
    child.once('exit', (code) => setTimeout(() => {
      clearTimeout(timer);
      if (!out.text.match(until)) fail(new Error(`exited (${code}) before ${until}\n--- stdout ---\n${out.text}`));
    }, 200));
    check();
  });
}

/** The pid of the child of `parent` running `services/<name>/src/main.ts`. */
async function servicePid(parent: number, name: string): Promise<number> {
  const { stdout } = await run('ps', ['-o', 'pid=,args=', '--ppid', String(parent)]);
  const line = stdout.split('\n').find((l) => l.includes(`services/${name}/src/main.ts`));
  if (!line) throw new Error(`no ${name} under pid ${parent}:\n${stdout}`);
  return Number(line.trim().split(/\s+/)[0]);
}

describe('pnpm start on a fresh database', () => {
  const runDb = new URL(inject('databaseUrl'));
  // Named after the run's database, so the global teardown drops it (and its streams) too.
  const dbName = `${runDb.pathname.slice(1)}_s${randomBytes(3).toString('hex')}`;
  const databaseUrl = new URL(runDb);
  databaseUrl.pathname = `/${dbName}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-start-'));
  let child: ChildProcess | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }, 60_000);

  it('prints the banner last with the key it made, supervises its services, and tells a restart how to get back in', async () => {
    const startEnv = {
      DATABASE_URL: databaseUrl.toString(),
      NATS_URL: inject('natsUrl'),
      GW_DATA_DIR: dataDir,
      GATEWAY_PORT: String(await freePort()),
      CONSOLE_PORT: String(await freePort()),
    };
    child = start(startEnv);
    const out = { text: '' };
    child.stdout!.on('data', (d: Buffer) => (out.text += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out.text += d.toString()));
    await waitFor(child, out, /press Ctrl-C.*\n.*-{20,}\n/, 150_000);

    // The banner is the last thing printed, and nothing but `[start]` lines (service logs go to files).
    const lines = out.text.trimEnd().split('\n');
    expect(lines.every((l) => l.startsWith('[start] '))).toBe(true);
    const banner = out.text.slice(out.text.indexOf('[start] ----'));
    const key = banner.match(/demo API key \(shown once, keep it\): (gwk_\S+)/)![1]!;
    const curl = banner.match(/try: curl -H "Authorization: Bearer (\S+)" (\S+)\/models/)!;
    expect(curl[1]).toBe(key);
    expect(banner).toMatch(/dashboard login \(shown once, keep it\): demo@example\.com \/ \S+/);
    expect(banner).toContain('source scripts/toolchain.sh');
    // The curl line works as printed.
    const models = await fetch(`${curl[2]}/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(models.status).toBe(200);

    // Every process has its own metrics address, recorded and printed, and serving.
    const local = JSON.parse(readFileSync(join(dataDir, 'local-run.json'), 'utf8')) as { metrics: Record<string, string>; eventsNamespace: string };
    expect(Object.keys(local.metrics).sort()).toEqual(['billing', 'catalog', 'console', 'edge-gateway', 'media', 'text', 'video-jobs']);
    expect(new Set(Object.values(local.metrics)).size).toBe(7);
    for (const [name, url] of Object.entries(local.metrics)) {
      expect(banner).toContain(`${name} :${new URL(url).port}`);
      const res = await fetch(url);
      expect({ name, status: res.status }).toEqual({ name, status: 200 });
      expect(await res.text()).toContain(`service_name="${name}"`);
    }
    // Events are namespaced by the database: another deployment on this NATS server has other streams.
    expect(local.eventsNamespace).toMatch(new RegExp(`^${dbName}-[0-9a-f]{6}$`));

    // A service killed with -9 is reported with its signal and is back in service within seconds.
    const billingPid = await servicePid(child.pid!, 'billing');
    const before = out.text.length;
    process.kill(billingPid, 'SIGKILL');
    await waitFor(child, out, new RegExp(`billing \\(pid ${billingPid}\\) died: signal SIGKILL`), 10_000);
    await waitFor(child, out, /billing is back at \S+ \(pid \d+\)/, 30_000);
    expect(out.text.slice(before)).toMatch(/restarting billing in \d+\.\d s/);
    const secondPid = await servicePid(child.pid!, 'billing');
    expect(secondPid).not.toBe(billingPid);
    // Dying again within a minute doubles the wait (backoff), and it comes back again.
    process.kill(secondPid, 'SIGKILL');
    await waitFor(child, out, new RegExp(`billing \\(pid ${secondPid}\\) died: signal SIGKILL[^]*restarting billing in 1\\.0 s[^]*billing is back at`), 30_000);
    const accountId = banner.match(/demo account: (\S+) with/)![1]!;
    const wallet = await run(process.execPath, [join(ROOT, 'packages/admin-cli/src/main.ts'), 'wallet', 'show', '--account', accountId, '--json'], {
      env: { ...process.env, GW_DATA_DIR: dataDir },
    });
    expect(JSON.parse(wallet.stdout)).toEqual({ balance: 1_000_000 });
    // The services ask every caller for the token pnpm start made (the CLI above found it in local-run.json).
    const tokenless = run(process.execPath, [join(ROOT, 'packages/admin-cli/src/main.ts'), 'wallet', 'show', '--account', accountId, '--json'], {
      env: { ...process.env, GW_DATA_DIR: dataDir, SERVICE_TOKEN: '' },
    });
    await expect(tokenless).rejects.toMatchObject({ stderr: expect.stringMatching(/token|unauthenticated/i) });

    // Stopped and started again: nothing is shown twice, and it says how to get a key and a password back.
    const stopped = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    expect(await stopped).toBe(0);
    child = start(startEnv);
    const again = { text: '' };
    child.stdout!.on('data', (d: Buffer) => (again.text += d.toString()));
    await waitFor(child, again, /press Ctrl-C.*\n.*-{20,}\n/, 150_000);
    expect(again.text).not.toMatch(/gwk_[A-Za-z0-9]{8,}/);
    expect(again.text).not.toContain('shown once');
    expect(again.text).toContain(`pnpm admin key create --account ${accountId}`);
    expect(again.text).toContain('pnpm admin user reset-password --email demo@example.com');
    expect(again.text).toContain('source scripts/toolchain.sh');
  }, 400_000);
});
