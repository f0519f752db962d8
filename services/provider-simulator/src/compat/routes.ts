import type { FastifyInstance } from 'fastify';
import type { Sim } from '../context.ts';
import { registerChatCompletions } from '../openai/chat.ts';
import { registerOpenAiModels } from '../openai/models.ts';
import { guardProvider } from '../scope.ts';

/** An "OpenAI-compatible" provider: chat completions and the model listing only. */
export function compatRoutes(app: FastifyInstance, sim: Sim): void {
  app.register(
    async (v1) => {
      guardProvider(v1, sim, 'compat', { auth: true });
      registerOpenAiModels(v1, sim, 'compat');
      registerChatCompletions(v1, sim, 'compat');
    },
    { prefix: '/compat/v1' },
  );
}
