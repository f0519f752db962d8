import { randomUUID } from 'node:crypto';
import { billingV1, createClient, healthV1 } from '@gw/contracts';
import { createMoneyExchange, type MoneyCalls } from '../../services/edge-gateway/src/generation/billing-exchange.ts';
import { billingClient } from '../support/clients.ts';
import { fmt, runFixed, scratchDatabase, startService } from './support.ts';

/**
 * `pnpm bench:billing`: authorize+settle pairs per second through billing's gRPC API on a real
 * billing process and Postgres, at fixed concurrency, for one hot account and for 1,000
 * accounts: over the Exchange stream (the gateway's path) and as unary rpcs. The baseline,
 * measured in the same run, is a gRPC health check (no database): the ratio shows what the money
 * work costs over a bare round trip on this machine. `BENCH_ACCOUNTS` (default 1,000) and
 * `BENCH_SECONDS` shrink it to a smoke run that checks it still works.
 */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1_000);
const { MILLION_TOKENS } = billingV1.BillingUnit;

const db = await scratchDatabase();
const billingProc = await startService('billing', {
  DATABASE_URL: db.url,
  NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  EVENTS_NAMESPACE: `bench${Date.now().toString(36)}`,
  DB_POOL_MAX: '16',
  RATE_LIMIT_PER_SECOND: '1000000',
  RATE_LIMIT_PER_MINUTE: '100000000',
});
// The unary rows call BillingService's rpcs; accounts are made as an operator would.
const billing = billingClient({ billingAddr: billingProc.address });
const exchange = createMoneyExchange(billingProc.address);
const health = createClient(healthV1.Health, billingProc.address);

async function fundedAccounts(n: number): Promise<Array<{ accountId: string; keyId: string }>> {
  const out: Array<{ accountId: string; keyId: string }> = [];
  for (let i = 0; i < n; i++) {
    const { accountId } = await billing.createAccount({ name: `bench-${i}` });
    await billing.topUp({ accountId, credits: 1_000_000_000_000n, reference: `bench-${accountId}` });
    const { keyId } = await billing.createApiKey({ accountId, name: 'bench' });
    out.push({ accountId, keyId });
  }
  return out;
}

/** One billed text request: hold the worst case, then settle to the real usage. */
async function billedRequest(account: { accountId: string; keyId: string }, money: MoneyCalls = exchange): Promise<void> {
  const requestId = randomUUID();
  await money.authorize({
    requestId,
    accountId: account.accountId,
    keyId: account.keyId,
    endpoint: 'chat/completions',
    model: 'bench-model',
    unit: MILLION_TOKENS,
    pricePerUnit: 15_000n,
    worstUnits: 5_000n,
    text: true,
  });
  await money.settle({ requestId, accountId: account.accountId, units: 321n, inputTokens: 300n, outputTokens: 21n });
}

try {
  const [hot] = await fundedAccounts(1);
  const many = await fundedAccounts(ACCOUNTS);
  for (let i = 0; i < 200; i++) await billedRequest(many[i % many.length]!); // warm-up

  const baseline = await runFixed(CONCURRENCY, SECONDS, () => health.check({ service: '' }));
  const spread = (w: number, i: number) => many[(w * 7919 + i) % many.length]!;
  const hotRun = await runFixed(CONCURRENCY, SECONDS, () => billedRequest(hot!));
  const manyRun = await runFixed(CONCURRENCY, SECONDS, (w, i) => billedRequest(spread(w, i)));
  const hotUnary = await runFixed(CONCURRENCY, SECONDS, () => billedRequest(hot!, billing));
  const manyUnary = await runFixed(CONCURRENCY, SECONDS, (w, i) => billedRequest(spread(w, i), billing));
  const audit = await billing.auditLedger({});
  const ratio = (r: typeof baseline) => `ratio to baseline ${(r.perSecond / baseline.perSecond).toFixed(3)}`;

  const lines = [
    `billing benchmark: ${CONCURRENCY} concurrent clients, ${SECONDS} s per run, node ${process.version}`,
    `  baseline gRPC health check              ${fmt(baseline)}`,
    `  authorize+settle over the exchange (the gateway's path)`,
    `    1 hot account                         ${fmt(hotRun)}  ${ratio(hotRun)}`,
    `    ${`${ACCOUNTS.toLocaleString('en')} accounts`.padEnd(38)}${fmt(manyRun)}  ${ratio(manyRun)}`,
    `  authorize+settle as unary rpcs`,
    `    1 hot account                         ${fmt(hotUnary)}  ${ratio(hotUnary)}`,
    `    ${`${ACCOUNTS.toLocaleString('en')} accounts`.padEnd(38)}${fmt(manyUnary)}  ${ratio(manyUnary)}`,
    `  ledger audit after the runs: ${audit.problems.length === 0 ? 'clean' : `${audit.problems.length} problems`} (${audit.accounts} accounts)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (audit.problems.length > 0) process.exitCode = 1;
} finally {
  exchange.close();
  billing.close();
  health.close();
  await billingProc.stop();
  await db.drop();
}
