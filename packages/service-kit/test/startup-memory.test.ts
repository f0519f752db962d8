import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

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

/** The young generation's size after a start-up load, after collectStartupGarbage, and after more load. */
function run(env: Record<string, string>, nodeFlags: string[] = []): { grown: number; after: number; regrown: number; globalGc: string } {
  const out = execFileSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', GROW_THEN_COLLECT], {
    cwd: join(import.meta.dirname, '..'),
    encoding: 'utf8',
    env: { ...process.env, STARTUP_GC: '', ...env },
  });
  return JSON.parse(out) as { grown: number; after: number; regrown: number; globalGc: string };
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
