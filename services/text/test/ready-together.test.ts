import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { readyTogether } from '../src/domain/ready-together.ts';

async function collect<T>(source: AsyncIterable<T[]>): Promise<T[][]> {
  const groups: T[][] = [];
  for await (const group of source) groups.push(group);
  return groups;
}

async function* bursts() {
  yield 1;
  yield 2;
  yield 3; // a burst: one network read's worth
  await sleep(20);
  yield 4; // a slow, steady source: alone
  await sleep(20);
  yield 5;
  yield 6;
}

async function* empty(): AsyncGenerator<number> {}

async function* failing() {
  yield 'a';
  yield 'b';
  throw new Error('upstream broke');
}

describe('readyTogether', () => {
  it('groups what is ready without waiting for I/O, and keeps the order', async () => {
    expect(await collect(readyTogether(bursts()))).toEqual([[1, 2, 3], [4], [5, 6]]);
  });

  it('maps each item as it arrives, before the next one is asked for', async () => {
    const log: string[] = [];
    async function* source() {
      for (const n of [1, 2, 3]) {
        log.push(`read ${n}`);
        yield n;
      }
      log.push('source done'); // where telemetry reads the usage the mapped items hold
    }
    const groups = await collect(readyTogether(source(), (n) => (log.push(`map ${n}`), n * 10)));
    expect(groups.flat()).toEqual([10, 20, 30]);
    expect(log).toEqual(['read 1', 'map 1', 'read 2', 'map 2', 'read 3', 'map 3', 'source done']);
  });

  it('delivers the items before one that fails to map, then the failure, and closes the source', async () => {
    let closed = false;
    async function* burst() {
      try {
        yield* [1, 2, 3, 4];
      } finally {
        closed = true;
      }
    }
    const seen: number[][] = [];
    await expect(
      (async () => {
        for await (const group of readyTogether(burst(), (n) => {
          if (n === 3) throw new Error('cannot translate');
          return n;
        })) {
          seen.push(group);
        }
      })(),
    ).rejects.toThrow('cannot translate');
    expect(seen).toEqual([[1, 2]]);
    expect(closed).toBe(true);
  });

  it('yields nothing for an empty source', async () => {
    expect(await collect(readyTogether(empty()))).toEqual([]);
  });

  it('passes a failure through after the items before it, without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const seen: string[][] = [];
      await expect(
        (async () => {
          for await (const group of readyTogether(failing())) {
            seen.push(group);
            await sleep(10); // the consumer is busy while the source's failure is pending
          }
        })(),
      ).rejects.toThrow('upstream broke');
      expect(seen.flat()).toEqual(['a', 'b']);
      await sleep(10);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('closes the source when the consumer stops early', async () => {
    let closed = false;
    async function* endless() {
      try {
        for (let i = 0; ; i++) {
          yield i;
          await sleep(5);
        }
      } finally {
        closed = true;
      }
    }
    for await (const group of readyTogether(endless())) {
      if (group[0]! >= 2) break;
    }
    expect(closed).toBe(true);
  });
});
