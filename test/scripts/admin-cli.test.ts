import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, type RunningSystem } from '../../scripts/system.ts';
import { seedDemoModels } from '../support/clients.ts';
import { admin, startTestSystem } from '../support/system-fixture.ts';

const run = promisify(execFile);

// `pnpm admin` as an operator reads it: text and tables by default, against a real system.
let system: RunningSystem;

/** `pnpm admin <args>` without --json: its stdout. */
async function text(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'packages/admin-cli/src/main.ts'), ...args], {
    env: { ...process.env, BILLING_ADDR: system.billingAddr, CATALOG_ADDR: system.catalogAddr },
  });
  return stdout;
}

beforeAll(async () => {
  system = await startTestSystem();
  await seedDemoModels(system);
}, 120_000);
afterAll(() => system?.stop());

describe('pnpm admin, readable by default', () => {
  it('lists accounts with balance and live keys, shows one with its keys, and filters by name', async () => {
    const name = `acme-${Date.now()}`;
    const { account_id } = (await admin(system, 'account', 'create', '--name', name)) as { account_id: string };
    await admin(system, 'wallet', 'top-up', '--account', account_id, '--credits', '5000', '--reference', `t-${account_id}`);
    const key = (await admin(system, 'key', 'create', '--account', account_id, '--name', 'ci')) as { key_id: string };
    const revoked = (await admin(system, 'key', 'create', '--account', account_id, '--name', 'old')) as { key_id: string };
    await admin(system, 'key', 'revoke', revoked.key_id);

    const list = (await text('account', 'list', '--name', name)).split('\n');
    expect(list[0]).toBe('accounts:');
    expect(list[1]).toMatch(/^ {2}ACCOUNT ID\s+NAME\s+BALANCE\s+LIVE KEYS\s+CREATED AT$/);
    expect(list[2]).toMatch(new RegExp(`^  ${account_id}\\s+${name}\\s+5000\\s+1\\s+\\d{4}-\\d\\d-\\d\\dT`));
    expect(list).toHaveLength(4);
    const asJson = (await admin(system, 'account', 'list', '--name', name)) as { accounts: unknown[] };
    expect(asJson.accounts).toEqual([{ account_id, name, balance: 5000, live_keys: 1, created_at: expect.any(String) }]);

    const show = await text('account', 'show', account_id);
    expect(show).toContain(`account id: ${account_id}\nname: ${name}\n`);
    expect(show).toContain('balance: 5000\n');
    expect(show).toMatch(new RegExp(`keys:\\n {2}KEY ID\\s+NAME\\s+KEY\\s+CREATED AT\\s+EXPIRES AT\\s+REVOKED AT\\n`));
    expect(show).toMatch(new RegExp(`${key.key_id}\\s+ci\\s+gwk_\\S*\\.\\.\\.\\w{4}\\s+\\S+\\s+-\\s+-`));
  });

  it('shows the switches, and the model catalog as a table', async () => {
    expect(await text('switch', 'show')).toBe('maintenance: no\nai requests: yes\n');
    const models = (await text('models', 'list')).split('\n');
    expect(models[0]).toBe('listing hidden: no');
    expect(models[2]).toMatch(/^ {2}ID\s+KIND\s+ENABLED\s+PRICE CREDIT PER UNIT\s+ALIASES\s+ROUTES$/);
    expect(models.find((l) => l.includes('gpt-sim-mini'))).toMatch(/gpt-sim-mini\s+TEXT\s+yes\s+15000\s+-\s+openai:gpt-sim-mini$/);
  });
});
