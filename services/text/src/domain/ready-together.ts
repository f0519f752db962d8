const NEXT_TURN = Symbol('next turn');

/** Resolves once the event loop has turned: anything that was ready has been delivered by then. */
const nextTurn = () => new Promise<typeof NEXT_TURN>((resolve) => setImmediate(() => resolve(NEXT_TURN)));

/**
 * Groups an async sequence by readiness: each group is one item and every item already available
 * behind it without waiting for I/O (a burst parsed from one network read, or a backlog while the
 * process was busy). A slow, steady source yields groups of one. Errors and early exits pass
 * through as they would without grouping. `map` runs on each item as it arrives, before the next
 * is asked for (a generator of its own for that would cost a promise hop per item).
 */
export async function* readyTogether<T, U = T>(source: AsyncIterable<T>, map: (item: T) => U = (item) => item as unknown as U): AsyncGenerator<U[]> {
  const iterator = source[Symbol.asyncIterator]();
  let finished = false;
  try {
    let pending = iterator.next();
    for (;;) {
      const first = await pending;
      if (first.done) {
        finished = true;
        return;
      }
      const group = [map(first.value)];
      for (;;) {
        pending = iterator.next();
        // Marked handled: a failure is rethrown where `pending` is awaited, not reported meanwhile.
        pending.catch(() => undefined);
        let next: IteratorResult<T> | typeof NEXT_TURN;
        try {
          next = await Promise.race([pending, nextTurn()]);
        } catch (err) {
          // The items before a failure are delivered before it, as without grouping.
          finished = true;
          yield group;
          throw err;
        }
        if (next === NEXT_TURN) break;
        if (next.done) {
          finished = true;
          yield group;
          return;
        }
        let mapped: U;
        try {
          mapped = map(next.value);
        } catch (err) {
          yield group; // as a failure of the source; the source, not finished, is closed below
          throw err;
        }
        group.push(mapped);
      }
      yield group;
    }
  } finally {
    if (!finished) await iterator.return?.();
  }
}
