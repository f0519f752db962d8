import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Client } from 'pg';
import { billingV1 } from '@gw/contracts';
import { billingClient } from '../support/clients.ts';
import { loadFor, scratchDatabase, startService } from './support.ts';

/**
 * `node test/bench/billing-db.bench.ts`: what one billed text request (a hold, then its settle)
 * costs Postgres, as the gateway asks for it: every hold leased to its owner, with the account rate
 * limit counted in the hold, as the edge asks for chat (unary rpcs: the database does the same work
 * as over the Exchange stream). Per request:
 * transactions, statements (top level and inside billing's functions, from pg_stat_statements
 * when the server preloads it), rows written, WAL records and bytes, buffer accesses, and the CPU
 * time of billing's process and of the Postgres server's processes (/proc/<pid>/stat; the server
 * must run on this machine and serve nothing else for the CPU figure to mean anything, e.g. a
 * private instance on another port). Scenarios: 32 clients on one account, 32 clients over 1,000
 * accounts, and one client alone.
 *
 * DATABASE_URL: the server (a superuser); BENCH_SECONDS per scenario (10).
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
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
// BillingService's rpcs for the requests; accounts are made as an operator would.
const billing = billingClient({ billingAddr: billingProc.address });
const LEASE_OWNER = `bench-${randomUUID()}`;
const pg = new Client({ connectionString: db.url });
await pg.connect();

/** utime + stime of a process, in microseconds (clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/** The server's processes: the postmaster and its children. */
async function serverPids(): Promise<number[]> {
  const dir = (await pg.query<{ d: string }>(`select current_setting('data_directory') as d`)).rows[0]!.d;
  const postmaster = Number(readFileSync(`${dir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const pids = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

const preloaded = await pg.query(`select 1 from pg_settings where name = 'shared_preload_libraries' and setting like '%pg_stat_statements%'`);
const statements = preloaded.rowCount === 1;
if (statements) await pg.query('create extension if not exists pg_stat_statements');

interface Counters {
  cpuServer: Map<number, number>;
  cpuBilling: number;
  xacts: number;
  blks: number;
  rows: number;
  hot: number;
  walRecords: number;
  walFpi: number;
  walBytes: number;
  tables: Map<string, { ins: number; upd: number; hot: number }>;
}

async function counters(): Promise<Counters> {
  const d = (await pg.query(`select xact_commit + xact_rollback as x, blks_hit + blks_read as b from pg_stat_database where datname = current_database()`)).rows[0];
  const w = (await pg.query(`select wal_records, wal_fpi, wal_bytes from pg_stat_wal`)).rows[0];
  const t = await pg.query<{ relname: string; ins: string; upd: string; del: string; hot: string }>(
    `select relname, n_tup_ins as ins, n_tup_upd as upd, n_tup_del as del, n_tup_hot_upd as hot from pg_stat_user_tables where schemaname = 'billing'`,
  );
  const tables = new Map(t.rows.map((r) => [r.relname, { ins: Number(r.ins) + Number(r.del), upd: Number(r.upd), hot: Number(r.hot) }]));
  const cpuServer = new Map((await serverPids()).map((pid) => [pid, cpuMicros(pid)]));
  return {
    cpuServer,
    cpuBilling: cpuMicros(billingProc.child.pid!),
    xacts: Number(d.x),
    blks: Number(d.b),
    rows: [...tables.values()].reduce((s, r) => s + r.ins + r.upd, 0),
    hot: [...tables.values()].reduce((s, r) => s + r.hot, 0),
    walRecords: Number(w.wal_records),
    walFpi: Number(w.wal_fpi),
    walBytes: Number(w.wal_bytes),
    tables,
  };
}

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

/** One billed chat request as the edge makes it: the hold with the rate limit, then the settle. */
async function billedRequest(account: { accountId: string; keyId: string }): Promise<void> {
  const requestId = randomUUID();
  await billing.authorize({
    requestId,
    accountId: account.accountId,
    keyId: account.keyId,
    endpoint: 'chat/completions',
    model: 'bench-model',
    unit: MILLION_TOKENS,
    pricePerUnit: 15_000n,
    worstUnits: 5_000n,
    text: true,
    checkRateLimit: true,
    leaseOwner: LEASE_OWNER,
  });
  await billing.settle({ requestId, accountId: account.accountId, units: 321n, inputTokens: 300n, outputTokens: 21n });
}

const settle = () => new Promise((r) => setTimeout(r, 2_000)); // backends flush their statistics within a second of going idle

async function scenario(name: string, concurrency: number, op: (w: number, i: number) => Promise<void>): Promise<string[]> {
  await settle();
  if (statements) await pg.query('select pg_stat_statements_reset()');
  const before = await counters();
  let done = 0;
  const run = await loadFor(concurrency, SECONDS * 1000, async (w, i) => {
    await op(w, i);
    done++;
  });
  const billingCpu = cpuMicros(billingProc.child.pid!) - before.cpuBilling;
  await settle();
  const after = await counters();
  let serverCpu = 0;
  for (const [pid, us] of after.cpuServer) serverCpu += us - (before.cpuServer.get(pid) ?? 0);
  const per = (v: number, digits = 1) => (v / done).toFixed(digits);
  const lines = [
    `${name}: ${done} requests in ${run.seconds.toFixed(1)} s = ${(done / run.seconds).toFixed(0)}/s, ${run.errors} errors`,
    `  CPU per request: Postgres ${per(serverCpu, 0)} µs, billing ${per(billingCpu, 0)} µs`,
    `  per request: transactions ${per(after.xacts - before.xacts, 2)}, rows written ${per(after.rows - before.rows, 2)} (HOT updates ${per(after.hot - before.hot, 2)}), ` +
      `WAL records ${per(after.walRecords - before.walRecords)}, WAL bytes ${per(after.walBytes - before.walBytes, 0)} (full pages ${per(after.walFpi - before.walFpi, 2)}), ` +
      `buffer accesses ${per(after.blks - before.blks, 0)}`,
  ];
  const tables = [...after.tables].flatMap(([table, a]) => {
    const b = before.tables.get(table) ?? { ins: 0, upd: 0, hot: 0 };
    const ins = a.ins - b.ins;
    const upd = a.upd - b.upd;
    return ins + upd > 0 ? [`${table} +${per(ins, 2)}/~${per(upd, 2)}${a.hot - b.hot > 0 ? ` (hot ${per(a.hot - b.hot, 2)})` : ''}`] : [];
  });
  lines.push(`  rows by table (inserted+deleted / updated): ${tables.join(', ')}`);
  if (statements) {
    const s = await pg.query<{ toplevel: boolean; calls: string; ms: string; query: string }>(
      `select toplevel, calls, total_exec_time as ms, regexp_replace(query, '\\s+', ' ', 'g') as query from pg_stat_statements
        where dbid = (select oid from pg_database where datname = current_database()) and query not like '%pg_stat%'
          and query not ilike 'show %' order by toplevel desc, total_exec_time desc`,
    );
    const top = s.rows.filter((r) => r.toplevel);
    const nested = s.rows.filter((r) => !r.toplevel);
    const sum = (rows: typeof s.rows, k: 'calls' | 'ms') => rows.reduce((acc, r) => acc + Number(r[k]), 0);
    lines.push(
      `  statements per request: ${per(sum(top, 'calls'), 2)} top level (${((sum(top, 'ms') * 1000) / done).toFixed(0)} µs executing), ${per(sum(nested, 'calls'), 2)} nested`,
    );
    for (const r of s.rows.slice(0, 22)) {
      lines.push(`    ${r.toplevel ? 'top   ' : 'nested'} ${per(Number(r.calls), 3).padStart(7)}/req ${((Number(r.ms) * 1000) / Number(r.calls)).toFixed(1).padStart(7)} µs/call  ${r.query.slice(0, 110)}`);
    }
  }
  return lines;
}

try {
  await billing.renewLease({ owner: LEASE_OWNER });
  const [hot] = await fundedAccounts(1);
  const many = await fundedAccounts(1_000);
  for (let i = 0; i < 200; i++) await billedRequest(many[i % many.length]!); // warm-up
  const spread = (w: number, i: number) => many[(w * 7919 + i) % many.length]!;
  const out = [`billing's database work per request: ${SECONDS} s per scenario, node ${process.version}, pg_stat_statements ${statements ? 'on' : 'off'}`];
  out.push(...(await scenario('32 clients, 1 account', 32, () => billedRequest(hot!))));
  out.push(...(await scenario('32 clients, 1,000 accounts', 32, (w, i) => billedRequest(spread(w, i)))));
  out.push(...(await scenario('1 client', 1, (_w, i) => billedRequest(many[i % many.length]!))));
  const audit = await billing.auditLedger({});
  out.push(`ledger audit after the runs: ${audit.problems.length === 0 ? 'clean' : `${audit.problems.length} problems`} (${audit.accounts} accounts)`);
  process.stdout.write(`${out.join('\n')}\n`);
  if (audit.problems.length > 0) process.exitCode = 1;
} finally {
  await pg.end();
  billing.close();
  await billingProc.stop();
  await db.drop();
}
