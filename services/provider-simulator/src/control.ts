import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Sim } from './context.ts';
import { parseFault } from './faults.ts';
import { asInteger, asNumber, asObject, asString, isObject } from './json.ts';
import { defaultModels, modelFromId, type SimModel } from './models.ts';
import type { ModelSettings } from './state.ts';
import { isProvider, type ModelKind, PROVIDERS } from './types.ts';

/**
 * The simulator-only control API under /_sim (no provider imitates it, no auth: it listens on
 * loopback in tests and local runs). See the package README for the full contract.
 */

function controlError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).send({ error: { message } });
}

const KINDS: readonly ModelKind[] = ['text', 'image', 'video'];

/** `["id", {id, kind}]` or `{models: [...]}` → models; a string describes the first invalid entry. */
function parseModelList(body: unknown): SimModel[] | string {
  const list = Array.isArray(body) ? body : asObject(body).models;
  if (!Array.isArray(list)) return 'expected an array of model ids or {"models": [...]}';
  const models: SimModel[] = [];
  for (const item of list) {
    if (typeof item === 'string' && item !== '') {
      models.push(modelFromId(item));
    } else if (isObject(item) && typeof item.id === 'string' && item.id !== '') {
      const kind = asString(item.kind);
      if (kind !== undefined && !(KINDS as readonly string[]).includes(kind)) return `unknown kind "${kind}"`;
      models.push(modelFromId(item.id, kind as ModelKind | undefined));
    } else {
      return `invalid model entry ${JSON.stringify(item)}`;
    }
  }
  return models;
}

function parseSettings(body: unknown): ModelSettings | string {
  const raw = asObject(body);
  const settings: ModelSettings = {};
  for (const key of ['latencyMs', 'chunkDelayMs', 'videoDelayMs'] as const) {
    if (raw[key] === undefined || raw[key] === null) continue;
    const n = asInteger(raw[key]);
    if (n === undefined || n < 0) return `${key} must be a non-negative integer`;
    settings[key] = n;
  }
  if (raw.fault !== undefined && raw.fault !== null) {
    const fault = String(raw.fault);
    if (!parseFault(fault)) return `unknown fault "${fault}"`;
    settings.fault = fault;
  }
  if (raw.failRate !== undefined && raw.failRate !== null) {
    const rate = asNumber(raw.failRate);
    if (rate === undefined || rate <= 0 || rate > 1) return 'failRate must be in (0, 1]';
    settings.failRate = rate;
  }
  return settings;
}

/** `true` → 500; a status number (400-599) → that status; false/null → cleared. */
function parseListingFault(body: unknown): number | undefined | string {
  const raw = asObject(body);
  const value = raw.listing_fault ?? raw.listingFault ?? null;
  if (value === false || value === null) return undefined;
  if (value === true) return 500;
  const status = asInteger(value);
  if (status === undefined || status < 400 || status > 599) return 'listing_fault must be true, false or a 4xx/5xx status';
  return status;
}

export function registerControl(app: FastifyInstance, sim: Sim): void {
  const { state } = sim;

  app.get('/_sim/health', async () => ({ ok: true }));

  app.post('/_sim/reset', async () => {
    state.reset();
    return { ok: true };
  });

  app.get('/_sim/models', async () =>
    Object.fromEntries(PROVIDERS.map((p) => [p, state.served(p).map((m) => m.id)])),
  );

  app.get<{ Params: { provider: string } }>('/_sim/models/:provider', async (request, reply) => {
    const { provider } = request.params;
    if (!isProvider(provider)) return controlError(reply, 404, `unknown provider "${provider}"`);
    return { provider, models: state.served(provider) };
  });

  app.put<{ Params: { provider: string } }>('/_sim/models/:provider', async (request, reply) => {
    const { provider } = request.params;
    if (!isProvider(provider)) return controlError(reply, 404, `unknown provider "${provider}"`);
    const models = parseModelList(request.body);
    if (typeof models === 'string') return controlError(reply, 400, models);
    state.setServed(provider, models);
    return { provider, models: state.served(provider) };
  });

  app.delete<{ Params: { provider: string } }>('/_sim/models/:provider', async (request, reply) => {
    const { provider } = request.params;
    if (!isProvider(provider)) return controlError(reply, 404, `unknown provider "${provider}"`);
    state.setServed(provider, defaultModels(provider));
    return { provider, models: state.served(provider) };
  });

  app.get('/_sim/settings', async () => ({ models: state.allSettings(), listing: state.allListingFaults() }));

  app.delete('/_sim/settings', async () => {
    state.clearSettings();
    return { ok: true };
  });

  app.put<{ Params: { provider: string } }>('/_sim/settings/:provider', async (request, reply) => {
    const { provider } = request.params;
    if (!isProvider(provider)) return controlError(reply, 404, `unknown provider "${provider}"`);
    const status = parseListingFault(request.body);
    if (typeof status === 'string') return controlError(reply, 400, status);
    state.setListingFault(provider, status);
    return { provider, listing_fault: status ?? null };
  });

  app.put<{ Params: { provider: string; model: string } }>('/_sim/settings/:provider/:model', async (request, reply) => {
    const { provider, model } = request.params;
    if (!isProvider(provider)) return controlError(reply, 404, `unknown provider "${provider}"`);
    const settings = parseSettings(request.body);
    if (typeof settings === 'string') return controlError(reply, 400, settings);
    state.putSettings(provider, model, settings);
    return { provider, model, settings };
  });

  app.delete<{ Params: { provider: string; model: string } }>('/_sim/settings/:provider/:model', async (request, reply) => {
    const { provider, model } = request.params;
    if (!isProvider(provider)) return controlError(reply, 404, `unknown provider "${provider}"`);
    state.deleteSettings(provider, model);
    return { ok: true };
  });

  app.get<{ Querystring: { limit?: string; provider?: string; model?: string; path?: string } }>(
    '/_sim/requests',
    async (request) => {
      const limit = Math.max(1, asInteger(request.query.limit) ?? 100);
      const { provider, model, path } = request.query;
      return { requests: state.log.list(limit, { provider, model, path }) };
    },
  );

  app.delete('/_sim/requests', async () => {
    state.log.clear();
    return { ok: true };
  });
}
