import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startPeriodic } from '../src/periodic.ts';

/** A round the test finishes by hand, recording when each one started. */
function manualRounds() {
  const started: number[] = [];
  const finish: Array<(fail?: Error) => void> = [];
  const round = () =>
    new Promise<void>((resolve, reject) => {
      started.push(Date.now());
      finish.push((fail) => (fail ? reject(fail) : resolve()));
    });
  return { started, finish, round };
}

const logger = () => ({ warn: vi.fn<(obj: object, msg?: string) => void>() });

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('startPeriodic', () => {
  it('runs at once, then the interval after each round ends: a slow round is never overtaken', async () => {
    const { started, finish, round } = manualRounds();
    const stop = startPeriodic({ name: 'sweep', intervalMs: 100, logger: logger() }, round);
    expect(started).toEqual([0]);
    await vi.advanceTimersByTimeAsync(250); // the first round is still running
    expect(started).toEqual([0]);
    finish[0]!();
    await vi.advanceTimersByTimeAsync(99);
    expect(started).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(started).toEqual([0, 350]);
    finish[1]!();
    await stop();
  });

  it('with runAtStart false, waits a first interval', async () => {
    const { started, finish, round } = manualRounds();
    const stop = startPeriodic({ name: 'purge', intervalMs: 100, logger: logger(), runAtStart: false }, round);
    await vi.advanceTimersByTimeAsync(99);
    expect(started).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(started).toEqual([100]);
    finish[0]!();
    await stop();
  });

  it('logs a failed round by its name and goes on', async () => {
    const { started, finish, round } = manualRounds();
    const log = logger();
    const stop = startPeriodic({ name: 'provider sync', intervalMs: 100, logger: log }, round);
    const failure = new Error('catalog database away');
    finish[0]!(failure);
    await vi.advanceTimersByTimeAsync(100);
    expect(log.warn).toHaveBeenCalledWith({ err: failure }, 'provider sync failed');
    expect(started).toEqual([0, 100]);
    finish[1]!();
    await stop();
  });

  it('stop waits for the round in progress, and no round starts after it', async () => {
    const { started, finish, round } = manualRounds();
    const stop = startPeriodic({ name: 'worker round', intervalMs: 100, logger: logger() }, round);
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish[0]!();
    await stopping;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(started).toEqual([0]);
  });
});
