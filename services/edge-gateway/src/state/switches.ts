import { GatewayError } from '@gw/errors';

export interface SwitchValues {
  maintenance: boolean;
  aiRequestsDisabled: boolean;
}

/**
 * The operator switches as this replica knows them: loaded at start, replaced by every
 * `billing.switch.changed` event, and re-read periodically in case an event was missed.
 */
export class SwitchState {
  #values: SwitchValues = { maintenance: false, aiRequestsDisabled: false };

  set(values: SwitchValues): void {
    this.#values = { maintenance: values.maintenance, aiRequestsDisabled: values.aiRequestsDisabled };
  }

  get values(): SwitchValues {
    return this.#values;
  }

  /** Step 3 of the order of checks, for generation requests only. */
  assertGenerationAllowed(): void {
    if (this.#values.maintenance) {
      throw new GatewayError('system_maintenance', 'The service is under maintenance. Nothing was charged; retry later.');
    }
    if (this.#values.aiRequestsDisabled) {
      throw new GatewayError('ai_requests_disabled', 'AI requests are paused by an operator. Nothing was charged; retry later.');
    }
  }
}
