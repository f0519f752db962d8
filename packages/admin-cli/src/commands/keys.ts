import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { UsageError } from '../output.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

function iso(ms: bigint): string | null {
  return ms > 0n ? new Date(Number(ms)).toISOString() : null;
}

export function keyCommands(program: Command, run: Run): void {
  const key = program.command('key').description('API keys');
  key
    .command('create')
    .requiredOption('--account <id>', 'account id')
    .option('--name <name>', 'key name', '')
    .option('--expires-at <iso>', 'expiry time (ISO 8601)')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; name: string; expiresAt?: string; json?: boolean }) =>
      run(async (c) => {
        let expires = 0n;
        if (o.expiresAt !== undefined) {
          const t = Date.parse(o.expiresAt);
          if (Number.isNaN(t)) throw new UsageError('--expires-at must be an ISO 8601 time');
          expires = BigInt(t);
        }
        const res = await c.accounts.createApiKey({ accountId: o.account, name: o.name, expiresAtUnixMs: expires });
        return { key_id: res.keyId, api_key: res.apiKey };
      }, !!o.json),
    );
  key
    .command('revoke <key_id>')
    .option('--json', 'print one JSON object')
    .action((keyId: string, o: { json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.revokeApiKey({ keyId });
        return { key_id: keyId, revoked_at: iso(res.revokedAtUnixMs) };
      }, !!o.json),
    );
  key
    .command('list')
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.accounts.listKeyDetails({ accountId: o.account });
        return {
          keys: res.keys.map((d) => d.info!).map((k) => ({
            key_id: k.keyId,
            name: k.name,
            prefix: k.prefix,
            last_four: k.lastFour,
            created_at: iso(k.createdAtUnixMs),
            expires_at: iso(k.expiresAtUnixMs),
            revoked_at: iso(k.revokedAtUnixMs),
          })),
        };
      }, !!o.json),
    );
}
