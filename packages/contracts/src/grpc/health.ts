import type * as grpc from '@grpc/grpc-js';
import { on } from 'node:events';
import { EventEmitter } from 'node:events';
import { Health, HealthCheckResponse_ServingStatus as Status } from '../gen/grpc/health/v1/health_pb.js';
import { addService } from './server.ts';

/**
 * The standard grpc.health.v1 service. A service starts NOT_SERVING, flips to SERVING once it is
 * ready, and back to NOT_SERVING first thing on shutdown so load balancers stop sending calls.
 */
export class HealthState {
  #serving = false;
  readonly #changes = new EventEmitter();

  get serving(): boolean {
    return this.#serving;
  }

  set(serving: boolean): void {
    if (serving === this.#serving) return;
    this.#serving = serving;
    this.#changes.emit('change');
  }

  status(): Status {
    return this.#serving ? Status.SERVING : Status.NOT_SERVING;
  }

  async *watch(signal: AbortSignal): AsyncGenerator<Status> {
    yield this.status();
    for await (const _ of on(this.#changes, 'change', { signal })) yield this.status();
  }
}

export function addHealthService(server: grpc.Server, state: HealthState): void {
  addService(server, Health, {
    check: async () => ({ status: state.status() }),
    async *watch(_req, ctx) {
      try {
        for await (const status of state.watch(ctx.signal)) yield { status };
      } catch (err) {
        if (!ctx.signal.aborted) throw err;
      }
    },
  });
}
