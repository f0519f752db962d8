import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { positiveInt } from '../output.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

export function accountCommands(program: Command, run: Run): void {
  const account = program.command('account').description('accounts');
  account
    .command('create')
    .requiredOption('--name <name>', 'account name')
    .option('--json', 'print one JSON object')
    .action((o: { name: string; json?: boolean }) =>
      run(async (c) => ({ account_id: (await c.billing.createAccount({ name: o.name })).accountId }), !!o.json),
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
        const res = await c.billing.topUp({
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
      run(async (c) => ({ balance: (await c.billing.getWallet({ accountId: o.account })).balance }), !!o.json),
    );
}

