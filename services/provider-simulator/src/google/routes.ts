import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Sim } from '../context.ts';
import { sendError } from '../errors.ts';
import { asObject } from '../json.ts';
import { guardProvider } from '../scope.ts';
import { countTokensHandler, generateContent, streamGenerateContent } from './generate.ts';
import { getModel, listModels } from './models.ts';
import { cancelOperation, getFile, getOperation, predictLongRunning } from './videos.ts';

/** `gemini-sim-flash:generateContent` → model and method (Google puts the method after a colon). */
function splitModelAction(value: string): { model: string; action: string | undefined } {
  const colon = value.lastIndexOf(':');
  return colon < 0 ? { model: value, action: undefined } : { model: value.slice(0, colon), action: value.slice(colon + 1) };
}

function modelOfRequest(request: FastifyRequest): string | undefined {
  const params = request.params as Record<string, string | undefined>;
  const value = params.modelAction ?? params.model;
  return value === undefined ? undefined : splitModelAction(value).model;
}

/** Gemini API under /google/v1beta. */
export function googleRoutes(app: FastifyInstance, sim: Sim): void {
  app.register(
    async (scope) => {
      guardProvider(scope, sim, 'google', { auth: true, modelOf: modelOfRequest });

      scope.get<{ Querystring: { pageSize?: string; pageToken?: string } }>('/models', async (request, reply) =>
        listModels(sim, reply, request.query),
      );
      scope.get<{ Params: { model: string } }>('/models/:model', async (request, reply) =>
        getModel(sim, reply, request.params.model),
      );

      scope.post<{ Params: { modelAction: string }; Querystring: { alt?: string } }>(
        '/models/:modelAction',
        async (request, reply) => {
          const { model, action } = splitModelAction(request.params.modelAction);
          const body = asObject(request.body);
          switch (action) {
            case 'generateContent':
              return generateContent(sim, reply, model, body);
            case 'streamGenerateContent':
              return streamGenerateContent(sim, reply, model, body, request.query.alt === 'sse');
            case 'countTokens':
              return countTokensHandler(sim, reply, model, body);
            case 'predictLongRunning':
              return predictLongRunning(sim, reply, model, body);
            default:
              return sendError(reply, 'google', 404, `Method ${action ?? '(none)'} is not found on models/${model}.`);
          }
        },
      );

      scope.get<{ Params: { id: string } }>('/operations/:id', async (request, reply) =>
        getOperation(sim, request, reply, request.params.id),
      );
      scope.post<{ Params: { id: string } }>('/operations/:id', async (request, reply) => cancelOperation(sim, reply, request.params.id));
      scope.get<{ Params: { model: string; id: string } }>('/models/:model/operations/:id', async (request, reply) =>
        getOperation(sim, request, reply, request.params.id),
      );
      scope.get<{ Params: { file: string } }>('/files/:file', async (request, reply) =>
        getFile(sim, request, reply, request.params.file),
      );
    },
    { prefix: '/google/v1beta' },
  );
}
