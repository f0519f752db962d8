import type { FastifyInstance } from 'fastify';
import type { Sim } from '../context.ts';
import { guardProvider } from '../scope.ts';
import { registerChatCompletions } from './chat.ts';
import { registerImageFiles, registerImages } from './images.ts';
import { registerOpenAiModels } from './models.ts';
import { registerResponses } from './responses.ts';
import { registerVideos } from './videos.ts';

/** OpenAI under /openai/v1, plus the unauthenticated image URLs under /openai/files. */
export function openaiRoutes(app: FastifyInstance, sim: Sim): void {
  app.register(
    async (v1) => {
      guardProvider(v1, sim, 'openai', { auth: true });
      registerOpenAiModels(v1, sim, 'openai');
      registerChatCompletions(v1, sim, 'openai');
      registerResponses(v1, sim);
      registerImages(v1, sim);
      registerVideos(v1, sim);
    },
    { prefix: '/openai/v1' },
  );
  app.register(
    async (files) => {
      guardProvider(files, sim, 'openai', { auth: false });
      registerImageFiles(files, sim);
    },
    { prefix: '/openai' },
  );
}
