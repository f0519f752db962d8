import type { FastifyInstance } from 'fastify';
import type { Sim } from '../context.ts';
import { sendModelNotFound } from '../errors.ts';
import type { SimModel } from '../models.ts';
import { listingFaultHandled } from '../pipeline.ts';
import type { Provider } from '../types.ts';

function modelObject(model: SimModel, provider: Provider): Record<string, unknown> {
  return { id: model.id, object: 'model', created: model.created, owned_by: provider === 'openai' ? 'system' : 'compat' };
}

/** GET /models and /models/{id} in OpenAI's shape (also used by the OpenAI-compatible provider). */
export function registerOpenAiModels(app: FastifyInstance, sim: Sim, provider: Provider): void {
  app.get('/models', async (_request, reply) => {
    if (listingFaultHandled(sim, reply, provider)) return reply;
    return reply.send({ object: 'list', data: sim.state.served(provider).map((m) => modelObject(m, provider)) });
  });

  app.get<{ Params: { id: string } }>('/models/:id', async (request, reply) => {
    const model = sim.state.servedModel(provider, request.params.id);
    if (!model) return sendModelNotFound(reply, provider, request.params.id);
    return reply.send(modelObject(model, provider));
  });
}
