import type { FastifyReply } from 'fastify';
import type { Sim } from '../context.ts';
import { sendError, sendModelNotFound } from '../errors.ts';
import { asInteger } from '../json.ts';
import type { SimModel } from '../models.ts';
import { listingFaultHandled } from '../pipeline.ts';
import type { ModelKind } from '../types.ts';

const METHODS: Record<ModelKind, string[]> = {
  text: ['generateContent', 'streamGenerateContent', 'countTokens', 'createCachedContent', 'batchGenerateContent'],
  image: ['generateContent', 'streamGenerateContent', 'countTokens'],
  video: ['predictLongRunning'],
};

function modelResource(model: SimModel): Record<string, unknown> {
  const resource: Record<string, unknown> = {
    name: `models/${model.id}`,
    version: '001',
    displayName: model.displayName,
    description: `Simulated ${model.kind} model.`,
    inputTokenLimit: model.kind === 'video' ? 1024 : 1_048_576,
    outputTokenLimit: model.kind === 'text' ? 65_536 : 8192,
    supportedGenerationMethods: METHODS[model.kind],
  };
  if (model.kind !== 'video') Object.assign(resource, { temperature: 1, topP: 0.95, topK: 64, maxTemperature: 2 });
  return resource;
}

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

/** GET models?pageSize=&pageToken=: page tokens are opaque (base64url of the next offset). */
export function listModels(sim: Sim, reply: FastifyReply, query: { pageSize?: string; pageToken?: string }): FastifyReply {
  if (listingFaultHandled(sim, reply, 'google')) return reply;
  const all = sim.state.served('google');
  const requested = asInteger(query.pageSize);
  const pageSize = Math.min(MAX_PAGE_SIZE, requested === undefined || requested <= 0 ? DEFAULT_PAGE_SIZE : requested);
  let offset = 0;
  if (query.pageToken !== undefined && query.pageToken !== '') {
    const decoded = asInteger(Buffer.from(query.pageToken, 'base64url').toString('utf8'));
    if (decoded === undefined || decoded < 0) return sendError(reply, 'google', 400, 'Invalid page token.');
    offset = decoded;
  }
  const page = all.slice(offset, offset + pageSize);
  const next = offset + page.length;
  const body: Record<string, unknown> = { models: page.map(modelResource) };
  if (next < all.length) body.nextPageToken = Buffer.from(String(next)).toString('base64url');
  return reply.send(body);
}

export function getModel(sim: Sim, reply: FastifyReply, id: string): FastifyReply {
  const model = sim.state.servedModel('google', id);
  if (!model) return sendModelNotFound(reply, 'google', id);
  return reply.send(modelResource(model));
}
