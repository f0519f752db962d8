import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { ROOT, startSystem, type RunningSystem, type SystemOptions } from '../../scripts/system.ts';

const run = promisify(execFile);

/**
 * A database of its own for one test system, so suites running in parallel never see each other's
 * global state (operator switches, catalog settings). Named after the run's database, which the
 * global teardown drops together with these.
 */
async function systemDatabase(): Promise<string> {
  const runUrl = new URL(inject('databaseUrl'));
  const name = `${runUrl.pathname.slice(1)}_s${randomBytes(3).toString('hex')}`;
  const serverUrl = new URL(runUrl);
  serverUrl.pathname = '/postgres';
  const client = new Client({ connectionString: serverUrl.toString() });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  runUrl.pathname = `/${name}`;
  return runUrl.toString();
}

/** Starts the whole system as processes on free ports, in a database of its own. */
export async function startTestSystem(extra: Partial<SystemOptions> = {}): Promise<RunningSystem> {
  return startSystem({
    databaseUrl: await systemDatabase(),
    natsUrl: inject('natsUrl'),
    // A namespace of its own too: a durable consumer of one system must not take another's events.
    eventsNamespace: `${inject('eventsNamespace')}_s${randomBytes(3).toString('hex')}`,
    gatewayPort: 0,
    internalPorts: 'random',
    logs: mkdtempSync(join(tmpdir(), 'gw-logs-')),
    ...extra,
  });
}

/** Runs `pnpm admin <args> --json` against the system and parses its one JSON object. */
export async function admin(system: RunningSystem, ...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'packages/admin-cli/src/main.ts'), ...args, '--json'], {
    env: {
      ...process.env,
      BILLING_ADDR: system.billingAddr,
      CATALOG_ADDR: system.catalogAddr,
      TEXT_ADDR: system.textAddr,
      CONSOLE_URL: system.consoleUrl,
      CONSOLE_ADMIN_TOKEN: system.consoleAdminToken,
    },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

/** A funded account with one key, made through the operator CLI as an operator would. */
export async function fundedAccount(system: RunningSystem, credits: number): Promise<{ accountId: string; keyId: string; apiKey: string }> {
  const { account_id } = (await admin(system, 'account', 'create', '--name', `acct-${Date.now()}`)) as { account_id: string };
  await admin(system, 'wallet', 'top-up', '--account', account_id, '--credits', String(credits), '--reference', `seed-${account_id}`);
  const key = (await admin(system, 'key', 'create', '--account', account_id)) as { key_id: string; api_key: string };
  return { accountId: account_id, keyId: key.key_id, apiKey: key.api_key };
}
