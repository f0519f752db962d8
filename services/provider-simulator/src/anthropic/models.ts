import type { FastifyInstance } from 'fastify';
import type { Sim } from '../context.ts';
import { sendModelNotFound } from '../errors.ts';
import { asInteger } from '../json.ts';
import type { SimModel } from '../models.ts';
import { listingFaultHandled } from '../pipeline.ts';

function modelInfo(model: SimModel): Record<string, unknown> {
  return {
    type: 'model',
    id: model.id,
    display_name: model.displayName,
    created_at: new Date(model.created * 1000).toISOString(),
  };
}

/** GET /v1/models (cursor pagination with limit / after_id / before_id) and /v1/models/{id}. */
export function registerAnthropicModels(app: FastifyInstance, sim: Sim): void {
  app.get<{ Querystring: { limit?: string; after_id?: string; before_id?: string } }>('/v1/models', async (request, reply) => {
    if (listingFaultHandled(sim, reply, 'anthropic')) return reply;
    const all = sim.state.served('anthropic');
    const limit = Math.min(1000, Math.max(1, asInteger(request.query.limit) ?? 20));
    let start = 0;
    let end = all.length;
    if (request.query.after_id !== undefined) start = all.findIndex((m) => m.id === request.query.after_id) + 1;
    if (request.query.before_id !== undefined) {
      end = Math.max(0, all.findIndex((m) => m.id === request.query.before_id));
      start = Math.max(0, end - limit);
    }
    const page = all.slice(start, Math.min(end, start + limit));
    return reply.send({
      data: page.map(modelInfo),
      has_more: start + page.length < end || (request.query.before_id !== undefined && start > 0),
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
    });
  });

  app.get<{ Params: { id: string } }>('/v1/models/:id', async (request, reply) => {
    const model = sim.state.servedModel('anthropic', request.params.id);
    if (!model) return sendModelNotFound(reply, 'anthropic', request.params.id);
    return reply.send(modelInfo(model));
  });
}
