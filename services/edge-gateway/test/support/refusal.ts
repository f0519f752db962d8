import { GatewayError } from '@gw/errors';

/** The domain error `fn` throws; fails the test when it returns or throws anything else. */
export function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}
