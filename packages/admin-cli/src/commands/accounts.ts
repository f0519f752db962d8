import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { positiveInt } from '../output.ts';

const iso = (ms: bigint) => (ms > 0n ? new Date(Number(ms)).toISOString() : null);

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

export function accountCommands(program: Command, run: Run): void {
  const account = program.command('account').description('accounts');
  account
    .command('create')
    .requiredOption('--name <name>', 'account name')
    .option('--json', 'print one JSON object')
    .action((o: { name: string; json?: boolean }) =>
      run(async (c) => ({ account_id: (await c.billingAdmin.createAccount({ name: o.name })).accountId }), !!o.json),
    );

  account
    .command('list')
    .option('--name <text>', 'only accounts whose name contains this text', '')
    .option('--limit <n>', 'at most this many (newest first; up to 1000)', '100')
    .option('--json', 'print one JSON object')
    .action((o: { name: string; limit: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.listAccounts({ limit: Number(positiveInt('--limit', o.limit, 1000n)), nameContains: o.name });
        return {
          accounts: res.accounts.map((a) => ({
            account_id: a.accountId,
            name: a.name,
            balance: a.balance,
            live_keys: a.liveKeys,
            created_at: iso(a.createdAtUnixMs),
          })),
        };
      }, !!o.json),
    );
  account
    .command('show <account_id>')
    .option('--json', 'print one JSON object')
    .action((accountId: string, o: { json?: boolean }) =>
      run(async (c) => {
        const [acct, wallet, keys] = await Promise.all([
          c.accounts.getAccount({ accountId }),
          c.accounts.getWallet({ accountId }),
          c.accounts.listKeyDetails({ accountId }),
        ]);
        return {
          account_id: acct.accountId,
          name: acct.name,
          time_zone: acct.timeZone,
          created_at: iso(acct.createdAtUnixMs),
          balance: wallet.balance,
          keys: keys.keys.map((d) => d.info!).map((k) => ({
            key_id: k.keyId,
            name: k.name,
            key: `${k.prefix}...${k.lastFour}`,
            created_at: iso(k.createdAtUnixMs),
            expires_at: iso(k.expiresAtUnixMs),
            revoked_at: iso(k.revokedAtUnixMs),
          })),
        };
      }, !!o.json),
    );

  const wallet = program.command('wallet').description('wallets');
  wallet
    .command('top-up')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--credits <n>', 'credits to add')
    .requiredOption('--reference <text>', 'unique reference; a repeat moves nothing')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; credits: string; reference: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.topUp({
          accountId: o.account,
          credits: positiveInt('--credits', o.credits),
          reference: o.reference,
        });
        return { balance: res.balance, applied: res.applied };
      }, !!o.json),
    );
  wallet
    .command('show')
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; json?: boolean }) =>
      run(async (c) => ({ balance: (await c.accounts.getWallet({ accountId: o.account })).balance }), !!o.json),
    );
}

