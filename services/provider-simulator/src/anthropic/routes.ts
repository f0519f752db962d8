import type { FastifyInstance } from 'fastify';
import type { Sim } from '../context.ts';
import { guardProvider } from '../scope.ts';
import { registerMessages } from './messages.ts';
import { registerAnthropicModels } from './models.ts';

/** Anthropic under /anthropic (the SDK base URL; paths carry their own /v1). */
export function anthropicRoutes(app: FastifyInstance, sim: Sim): void {
  app.register(
    async (scope) => {
      guardProvider(scope, sim, 'anthropic', { auth: true });
      registerAnthropicModels(scope, sim);
      registerMessages(scope, sim);
    },
    { prefix: '/anthropic' },
  );
}
