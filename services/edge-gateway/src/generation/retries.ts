import { RpcError } from '@gw/contracts';
import pRetry, { type Options } from 'p-retry';

/**
 * How the gateway repeats an idempotent call to one of our services that got no answer (an
 * `RpcError`: the service restarting, overloaded, or its database away). An answer, a domain
 * refusal included, is final and never repeated.
 */

/**
 * On a request's path: a few jittered retries, each attempt with the call's own deadline (about
 * 20 s of a service away in all), so a restart costs the client a wait, not an error.
 */
export const ON_REQUEST: Options = { retries: 3, minTimeout: 250, factor: 2, randomize: true };

/**
 * After the client has its answer: jittered backoff for 10 minutes (an outage does not end with
 * every gateway retrying at once), without keeping the process alive.
 */
export const IN_BACKGROUND: Options = { retries: 40, minTimeout: 500, factor: 2, maxTimeout: 30_000, randomize: true, maxRetryTime: 10 * 60_000, unref: true };

/**
 * Runs `call` until it is answered or `policy` gives up (then its last error is thrown). The first
 * attempt runs on its own: almost every call is answered at once, and p-retry's set-up (its
 * options, abort wiring and attempt bookkeeping) cost about 3% of the gateway's CPU per request.
 * A first attempt that got no answer hands its error to p-retry as its own first failure, so the
 * waits and the number of attempts are the policy's, as if p-retry had made it.
 */
export async function untilAnswered<T>(call: () => Promise<T>, policy: Options): Promise<T> {
  let unanswered: RpcError;
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    unanswered = err;
  }
  let first = true;
  const attempt = () => {
    if (!first) return call();
    first = false;
    return Promise.reject(unanswered);
  };
  return pRetry(attempt, { ...policy, shouldRetry: ({ error }) => error instanceof RpcError });
}
