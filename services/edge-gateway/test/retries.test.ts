import { status } from '@grpc/grpc-js';
import { RpcError } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { describe, expect, it } from 'vitest';
import { untilAnswered } from '../src/generation/retries.ts';

// The first attempt runs outside p-retry; what follows a failed one must be what the policy says.
const FAST = { retries: 2, minTimeout: 1, factor: 1 };
const unavailable = () => new RpcError(status.UNAVAILABLE, 'no answer');

/** A call that fails with the given errors in turn, then answers `ok`; counts its attempts. */
function calls(...failures: Error[]) {
  const made = { count: 0 };
  const call = async () => {
    const failure = failures[made.count++];
    if (failure) throw failure;
    return 'ok';
  };
  return { made, call };
}

describe('untilAnswered', () => {
  it('answers the first attempt without another', async () => {
    const { made, call } = calls();
    await expect(untilAnswered(call, FAST)).resolves.toBe('ok');
    expect(made.count).toBe(1);
  });

  it('repeats a call that got no answer', async () => {
    const { made, call } = calls(unavailable(), unavailable());
    await expect(untilAnswered(call, FAST)).resolves.toBe('ok');
    expect(made.count).toBe(3);
  });

  it('makes the attempts the policy allows, the first included, then throws the last error', async () => {
    const last = unavailable();
    const { made, call } = calls(unavailable(), unavailable(), last, unavailable());
    await expect(untilAnswered(call, FAST)).rejects.toBe(last);
    expect(made.count).toBe(3);
  });

  it('never repeats an answer, a refusal included', async () => {
    const refusal = new GatewayError('insufficient_balance', 'no credits');
    const first = calls(refusal);
    await expect(untilAnswered(first.call, FAST)).rejects.toBe(refusal);
    expect(first.made.count).toBe(1);
    const later = calls(unavailable(), refusal);
    await expect(untilAnswered(later.call, FAST)).rejects.toBe(refusal);
    expect(later.made.count).toBe(2);
  });
});
