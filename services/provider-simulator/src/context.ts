import type { SimulatorState } from './state.ts';
import type { Provider } from './types.ts';

export interface SimConfig {
  apiKeys: Record<Provider, string>;
  /** How long a `timeout` fault hangs before giving up with a 504, when the client never disconnects. */
  timeoutFaultCapMs: number;
}

/** What every route module needs: the mutable state and the fixed configuration. */
export interface Sim {
  state: SimulatorState;
  config: SimConfig;
}
