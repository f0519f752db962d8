import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { INT32_MAX, nonNegativeInt, UsageError } from '../output.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

const iso = (ms: bigint) => (ms > 0n ? new Date(Number(ms)).toISOString() : null);
const limitsOut = (limits: Array<{ limitType: string; period: string; value: bigint }>) =>
  limits.map((l) => ({ limit_type: l.limitType, period: l.period, value: l.value }));

const switchesOut = (s: { maintenance: boolean; aiRequestsDisabled: boolean } | undefined) => ({
  maintenance: s?.maintenance ?? false,
  ai_requests: !(s?.aiRequestsDisabled ?? false),
});

/** Per-key limits, rate limits, switches, reconciliation, usage and the ledger audit. */
export function billingOpsCommands(program: Command, run: Run): void {
  const key = program.commands.find((c) => c.name() === 'key')!;
  const limit = key.command('limit').description('per-key limits');
  limit
    .command('set')
    .requiredOption('--key <id>', 'key id')
    .requiredOption('--type <type>', 'spending | requests | tokens')
    .requiredOption('--period <period>', 'daily | monthly | lifetime')
    .requiredOption('--value <n>', 'credits, requests or tokens')
    .option('--json', 'print one JSON object')
    .action((o: { key: string; type: string; period: string; value: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.setKeyLimit({ keyId: o.key, limitType: o.type, period: o.period, value: nonNegativeInt('--value', o.value) });
        return { key_id: o.key, limits: limitsOut(res.limits) };
      }, !!o.json),
    );
  limit
    .command('clear')
    .requiredOption('--key <id>', 'key id')
    .requiredOption('--type <type>', 'spending | requests | tokens')
    .requiredOption('--period <period>', 'daily | monthly | lifetime')
    .option('--json', 'print one JSON object')
    .action((o: { key: string; type: string; period: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.clearKeyLimit({ keyId: o.key, limitType: o.type, period: o.period });
        return { key_id: o.key, limits: limitsOut(res.limits) };
      }, !!o.json),
    );

  const account = program.commands.find((c) => c.name() === 'account')!;
  account
    .command('rate-limit')
    .description('per-account rate limits')
    .command('set')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--per-second <n>', 'requests per second (0 = default)')
    .requiredOption('--per-minute <n>', 'requests per minute (0 = default)')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; perSecond: string; perMinute: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.setAccountRateLimit({
          accountId: o.account,
          perSecond: Number(nonNegativeInt('--per-second', o.perSecond, INT32_MAX)),
          perMinute: Number(nonNegativeInt('--per-minute', o.perMinute, INT32_MAX)),
        });
        return { account_id: o.account, per_second: res.perSecond, per_minute: res.perMinute };
      }, !!o.json),
    );

  const switches = program.command('switch').description('operator switches');
  switches
    .command('show')
    .option('--json', 'print one JSON object')
    .action((o: { json?: boolean }) => run(async (c) => switchesOut(await c.billing.getSwitches({})), !!o.json));
  switches
    .command('set <name> <state>')
    .description('turns a switch on or off: maintenance on|off, ai-requests on|off')
    .option('--json', 'print one JSON object')
    .action((name: string, state: string, o: { json?: boolean }) =>
      run(async (c) => {
        if (!['maintenance', 'ai-requests'].includes(name)) throw new UsageError('switch is maintenance or ai-requests');
        if (!['on', 'off'].includes(state)) throw new UsageError('state is on or off');
        const res = await c.billingAdmin.setSwitch({ name: name === 'ai-requests' ? 'ai_requests' : name, on: state === 'on' });
        return switchesOut(res.switches);
      }, !!o.json),
    );

  const reconcile = program.command('reconcile').description('keys blocked by a success without usage');
  reconcile
    .command('list')
    .option('--json', 'print one JSON object')
    .action((o: { json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.listReconciliations({});
        return { items: res.items.map((i) => ({ key_id: i.keyId, request_id: i.requestId, marked_at: iso(i.markedAtUnixMs) })) };
      }, !!o.json),
    );
  reconcile
    .command('resolve')
    .requiredOption('--key <id>', 'key id')
    .option('--charge <credits>', 'extra credits to charge for the unreported usage', '0')
    .option('--note <text>', 'resolution note', '')
    .option('--json', 'print one JSON object')
    .action((o: { key: string; charge: string; note: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.resolveReconciliation({ keyId: o.key, chargeCredits: nonNegativeInt('--charge', o.charge), note: o.note });
        return { key_id: o.key, resolved: res.resolved, balance_after: res.balanceAfter };
      }, !!o.json),
    );

  program
    .command('usage')
    .requiredOption('--key <id>', 'key id')
    .option('--limit <n>', 'records', '100')
    .option('--json', 'print one JSON object')
    .action((o: { key: string; limit: string; json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.getUsage({ keyId: o.key, limit: Number(nonNegativeInt('--limit', o.limit, INT32_MAX)) });
        return {
          key_id: o.key,
          records: res.records.map((r) => ({
            request_id: r.requestId,
            // The x-request-id the client sent, when it sent one (request_id is always ours).
            client_request_id: r.clientRequestId,
            model: r.model,
            endpoint: r.endpoint,
            input_tokens: r.inputTokens,
            output_tokens: r.outputTokens,
            units: r.units,
            credits: r.credits,
            created_at: iso(r.createdAtUnixMs),
          })),
        };
      }, !!o.json),
    );

  program
    .command('ledger')
    .description('the credit ledger')
    .command('audit')
    .description('prove every balance equals the sum of its ledger entries (exit 1 when not)')
    .option('--json', 'print one JSON object')
    .action((o: { json?: boolean }) =>
      run(async (c) => {
        const res = await c.billingAdmin.auditLedger({});
        if (res.problems.length > 0) process.exitCode = 1;
        return {
          ok: res.problems.length === 0,
          accounts: res.accounts,
          problems: res.problems.map((p) => ({ account_id: p.accountId, balance: p.balance, ledger_sum: p.ledgerSum, reason: p.reason })),
        };
      }, !!o.json),
    );
}
