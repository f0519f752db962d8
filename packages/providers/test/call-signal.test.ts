import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { CallSignal, DeadlineExceeded } from '../src/call-signal.ts';

describe('CallSignal', () => {
  it("passes the caller's abort on with the caller's reason, and says it was the caller", () => {
    const caller = new AbortController();
    const call = new CallSignal(caller.signal);
    expect(call.signal.aborted).toBe(false);
    const reason = new Error('client went away');
    caller.abort(reason);
    expect(call.signal.aborted).toBe(true);
    expect(call.signal.reason).toBe(reason);
    expect(call.callerAborted).toBe(true);
    expect(call.expired).toBeUndefined();
  });

  it('starts aborted when the caller already aborted', () => {
    const caller = new AbortController();
    caller.abort('gone');
    const call = new CallSignal(caller.signal);
    expect(call.signal.aborted).toBe(true);
    expect(call.signal.reason).toBe('gone');
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it('aborts with DeadlineExceeded when a deadline passes, naming it, and the caller did nothing', async () => {
    const caller = new AbortController();
    const call = new CallSignal(caller.signal);
    call.arm(5, 'first event');
    await new Promise((r) => setTimeout(r, 30));
    expect(call.signal.reason).toBeInstanceOf(DeadlineExceeded);
    expect(call.expired).toBe('first event');
    expect(call.callerAborted).toBe(false);
    call.dispose();
  });

  it('leaves nothing on the caller once disposed: no listener, and a later caller abort does not reach the finished call', () => {
    const caller = new AbortController();
    const calls = Array.from({ length: 3 }, () => new CallSignal(caller.signal));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(3);
    for (const call of calls) call.dispose();
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    caller.abort();
    expect(calls.some((c) => c.signal.aborted)).toBe(false);
  });

  it('works without a caller: only its deadlines abort it', () => {
    const call = new CallSignal();
    const disarm = call.arm(1_000, 'answer');
    disarm();
    call.dispose();
    expect(call.signal.aborted).toBe(false);
  });
});
