/** The service's notion of now. Injected everywhere a time is stored or compared. */
export type Clock = () => Date;

/**
 * The wall clock shifted by `offsetMs` (`CLOCK_OFFSET_MS`). An offset rather than a settable time:
 * time keeps flowing, so timers, leases and backoff behave as in production, only later.
 */
export function offsetClock(offsetMs: number): Clock {
  return () => new Date(Date.now() + offsetMs);
}
