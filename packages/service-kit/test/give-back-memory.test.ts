import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IdleCollection } from '../src/give-back-memory.ts';

// Start-up grows the young generation; collectStartupGarbage gives it back before the service
// takes requests. Run in a child process: the test runner's own heap is not a service's.
const GROW_THEN_COLLECT = `
import { getHeapSpaceStatistics } from 'node:v8';
const kit = await import('@gw/service-kit');
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const load = () => {
  const kept = [];
  for (let i = 0; i < 300_000; i++) { kept.push({ i, s: 'x' + i }); if (kept.length > 100_000) kept.splice(0, 50_000); }
};
load();
const grown = newSpace();
kit.collectStartupGarbage();
const after = newSpace();
load();
console.log(JSON.stringify({ grown, after, regrown: newSpace(), globalGc: typeof globalThis.gc }));
`;

/** Runs `script` in a child process of the kit's package, neither collection on unless `env` says so; its printed JSON. */
function inChild<T>(script: string, env: Record<string, string>, nodeFlags: string[] = []): T {
  const out = execFileSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', script], {
    cwd: join(import.meta.dirname, '..'),
    encoding: 'utf8',
    env: { ...process.env, STARTUP_GC: '', IDLE_GC: '', ...env },
  });
  return JSON.parse(out) as T;
}

/** The young generation's size after a start-up load, after collectStartupGarbage, and after more load. */
function run(env: Record<string, string>, nodeFlags: string[] = []): { grown: number; after: number; regrown: number; globalGc: string } {
  return inChild(GROW_THEN_COLLECT, env, nodeFlags);
}

describe('collectStartupGarbage', () => {
  it('with STARTUP_GC=true shrinks the young generation start-up grew, lets load grow it again, and leaves no gc in the global scope', () => {
    const { grown, after, regrown, globalGc } = run({ STARTUP_GC: 'true' });
    expect(grown).toBeGreaterThan(4 * 1024 * 1024);
    expect(after).toBeLessThanOrEqual(2 * 1024 * 1024);
    // Not a cap: load that keeps what it allocates grows it again.
    expect(regrown).toBeGreaterThan(4 * 1024 * 1024);
    expect(globalGc).toBe('undefined');
  });

  it('gives back no more than a --min-semi-space-size floor (the services on the request path: scripts/system.ts)', () => {
    const { grown, after, regrown } = run({ STARTUP_GC: 'true' }, ['--min-semi-space-size=8']);
    expect(grown).toBeGreaterThan(8 * 1024 * 1024);
    expect(after).toBe(8 * 1024 * 1024);
    expect(regrown).toBeGreaterThan(8 * 1024 * 1024);
  });

  it('does nothing without STARTUP_GC (a process keeps what start-up grew)', () => {
    const { grown, after } = run({});
    expect(grown).toBeGreaterThan(4 * 1024 * 1024);
    expect(after).toBeGreaterThan(4 * 1024 * 1024);
  });
});

describe('IdleCollection', () => {
  const MiB = 1024 * 1024;
  // A window of four checks, quiet under 2 % on average, 32 MiB of growth.
  const limits = { windowChecks: 4, quietUtilization: 0.02, minGrowthBytes: 32 * MiB };

  it('collects once the utilization averaged over a full window is quiet and the resident set grew 32 MiB above its lowest', () => {
    const idle = new IdleCollection(limits);
    expect(idle.check(0.01, 100 * MiB)).toBe(false); // the lowest: 100
    expect(idle.check(0.9, 250 * MiB)).toBe(false); // busy
    expect(idle.check(0.01, 250 * MiB)).toBe(false);
    expect(idle.check(0.01, 250 * MiB)).toBe(false); // a full window, but the busy check is in it
    expect(idle.check(0.01, 250 * MiB)).toBe(false);
    expect(idle.check(0.01, 250 * MiB)).toBe(true); // four quiet checks, grown 150
  });

  it('is not put off by one check a little busier than the rest (an idle service\'s own timers)', () => {
    const idle = new IdleCollection(limits);
    idle.check(0.01, 100 * MiB);
    idle.check(0.03, 200 * MiB);
    idle.check(0.01, 200 * MiB);
    expect(idle.check(0.01, 200 * MiB)).toBe(true); // average 1.5 %
  });

  it('waits for a full window before anything', () => {
    const idle = new IdleCollection(limits);
    idle.check(0, 100 * MiB);
    idle.check(0, 200 * MiB);
    expect(idle.check(0, 200 * MiB)).toBe(false);
  });

  it('leaves growth under 32 MiB alone however long the quiet', () => {
    const idle = new IdleCollection(limits);
    idle.check(0.01, 100 * MiB);
    for (let i = 0; i < 10; i++) expect(idle.check(0.001, 131 * MiB)).toBe(false);
  });

  it('collects once per busy spell: after a collection, quiet and growth count from what the service came down to', () => {
    const idle = new IdleCollection(limits);
    idle.check(0.01, 100 * MiB);
    idle.check(0.01, 200 * MiB);
    idle.check(0.01, 200 * MiB);
    expect(idle.check(0.01, 200 * MiB)).toBe(true);
    idle.collected();
    // What no collection gives back (here 40 MiB of it) does not bring on another.
    for (let i = 0; i < 10; i++) expect(idle.check(0.01, i === 0 ? 180 * MiB : 140 * MiB)).toBe(false);
    // A new spell grows it again; the window must be quiet again before the next.
    expect(idle.check(0.5, 260 * MiB)).toBe(false);
    for (let i = 0; i < 3; i++) expect(idle.check(0.01, 260 * MiB)).toBe(false);
    expect(idle.check(0.01, 260 * MiB)).toBe(true);
  });
});

// A service's heap after a busy spell: grown under load, kept when the load ends.
const BURST_THEN_QUIET = `
import { getHeapSpaceStatistics } from 'node:v8';
const kit = await import('@gw/service-kit');
const said = [];
const logger = { info: (fields, msg) => said.push({ fields, msg }), warn: (fields, msg) => said.push({ fields, msg }) };
kit.collectGarbageWhenIdle(logger, Number(process.env.CHECK_MS));
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const busyUntil = Date.now() + Number(process.env.BUSY_MS);
let kept = [];
// The burst: allocation in slices, the event loop turning between them as a server's would.
while (Date.now() < busyUntil) {
  for (let i = 0; i < 50_000; i++) { kept.push({ i, s: 'x' + i }); if (kept.length > 300_000) kept.splice(0, 150_000); }
  await new Promise((r) => setImmediate(r));
}
kept = [];
const grown = { rss: process.memoryUsage.rss(), newSpace: newSpace() };
await new Promise((r) => setTimeout(r, Number(process.env.QUIET_MS)));
console.log(JSON.stringify({ grown, after: { rss: process.memoryUsage.rss(), newSpace: newSpace() }, said }));
`;

interface Spell {
  grown: { rss: number; newSpace: number };
  after: { rss: number; newSpace: number };
  said: Array<{ fields: Record<string, number>; msg: string }>;
}

function spell(env: Record<string, string>): Spell {
  return inChild(BURST_THEN_QUIET, { CHECK_MS: '200', BUSY_MS: '1500', QUIET_MS: '9000', ...env });
}

describe('collectGarbageWhenIdle', { timeout: 30_000 }, () => {
  it('with IDLE_GC=true gives back what a busy spell grew once the process is quiet, once, and says so', () => {
    const { grown, after, said } = spell({ IDLE_GC: 'true' });
    expect(grown.newSpace).toBeGreaterThan(4 * 1024 * 1024);
    expect(said.map((s) => s.msg)).toEqual(['quiet after a busy spell: gave back its memory']);
    expect(said[0]!.fields.heapAfterMiB).toBeLessThan(said[0]!.fields.heapBeforeMiB!);
    expect(after.newSpace).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(after.rss).toBeLessThan(grown.rss - 32 * 1024 * 1024);
  });

  it('does nothing without IDLE_GC (a process keeps what the spell grew)', () => {
    const { grown, after, said } = spell({});
    expect(said).toEqual([]);
    expect(after.newSpace).toBe(grown.newSpace);
  });
});
