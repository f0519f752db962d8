import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { catalogV1, eventsV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Model, ModelAlias, ModelRoute, Setting } from '../db/entities.ts';
import { isUniqueViolation } from '../db/pg-errors.ts';

export const CATALOG_CHANGED_SUBJECT = 'catalog.model.changed';

const KINDS = { TEXT: catalogV1.ModelKind.TEXT, IMAGE: catalogV1.ModelKind.IMAGE, VIDEO: catalogV1.ModelKind.VIDEO } as const;
type KindName = keyof typeof KINDS;
const KIND_BY_ENUM = new Map<number, KindName>(Object.entries(KINDS).map(([name, value]) => [value, name as KindName]));

/** Endpoint paths a model may list (DECISIONS.md "Models"), by kind. */
export const CAPABILITIES_BY_KIND: Record<KindName, readonly string[]> = {
  TEXT: ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'],
  IMAGE: ['images/generations', 'images/edits'],
  VIDEO: ['videos/generations'],
};

const SIZE = /^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$/;

/** A model as stored, with its routes and aliases (the lists may hold other models' rows too). */
export interface StoredModel {
  model: Model;
  routes: ModelRoute[];
  aliases: ModelAlias[];
}

export function toProto(m: Model, routes: ModelRoute[], aliases: ModelAlias[]): catalogV1.Model {
  return create(catalogV1.ModelSchema, {
    id: m.id,
    kind: KINDS[m.kind as KindName] ?? catalogV1.ModelKind.UNSPECIFIED,
    capabilities: m.capabilities,
    priceCreditPerUnit: m.price === null || m.price === undefined ? undefined : BigInt(m.price),
    enabled: m.enabled,
    provider: m.provider,
    upstreamModel: m.upstreamModel,
    routes: routes
      .filter((r) => r.modelId === m.id)
      .sort((a, b) => a.priority - b.priority || a.provider.localeCompare(b.provider))
      .map((r) => ({ provider: r.provider, upstreamModel: r.upstreamModel, priority: r.priority, weight: r.weight })),
    limits: {
      maxOutputTokens: m.maxOutputTokens,
      imageSizes: m.imageSizes,
      videoFirstFrame: m.videoFirstFrame,
      videoLastFrame: m.videoLastFrame,
      firstByteTimeoutMs: m.firstByteTimeoutMs,
    },
    createdUnixMs: BigInt(new Date(m.createdAt).getTime()),
    aliases: aliases
      .filter((a) => a.modelId === m.id)
      .map((a) => a.alias)
      .sort(),
  });
}

export const storedToProto = (s: StoredModel) => toProto(s.model, s.routes, s.aliases);

/** The longest first-byte deadline a model may set: a provider's whole text deadline. */
const MAX_FIRST_BYTE_TIMEOUT_MS = 600_000;

/** Queues the event that makes every gateway reload its snapshot; same transaction as the change. */
export function announceChange(em: EntityManager, modelId: string): void {
  const event = create(eventsV1.CatalogChangedSchema, { eventId: randomUUID(), modelId });
  enqueueEvent(em, { subject: CATALOG_CHANGED_SUBJECT, payload: toBinary(eventsV1.CatalogChangedSchema, event), msgId: event.eventId });
}

export async function isListingHidden(em: EntityManager): Promise<boolean> {
  const s = await em.findOne(Setting, { name: 'listing_hidden' });
  return s?.value === true;
}

export async function setListingHidden(em: EntityManager, hidden: boolean): Promise<boolean> {
  await em.transactional(async (tx) => {
    await tx.upsert(Setting, { name: 'listing_hidden', value: hidden, updatedAt: new Date() });
    announceChange(tx, '');
    await tx.flush();
  });
  return hidden;
}

export async function allModels(em: EntityManager): Promise<{ models: Model[]; routes: ModelRoute[]; aliases: ModelAlias[] }> {
  const models = await em.find(Model, {}, { orderBy: { id: 'asc' } });
  const routes = await em.find(ModelRoute, {});
  const aliases = await em.find(ModelAlias, {}, { orderBy: { alias: 'asc' } });
  return { models, routes, aliases };
}

const COUNT_TOKENS = 'messages/count_tokens';

/**
 * The capabilities a model gets: those asked for, or all of its kind. `messages/count_tokens`
 * needs a provider's own counter (never an estimate): without one among the model's routes it is
 * left out of the defaults and refused when asked for.
 */
function capabilitiesOf(input: catalogV1.Model, kind: KindName, providers: string[], counts: (provider: string) => boolean): string[] {
  const counted = providers.some(counts);
  if (!counted && input.capabilities.includes(COUNT_TOKENS)) {
    throw new GatewayError('invalid_request', `No provider of this model has a token counter, so it cannot offer ${COUNT_TOKENS}.`);
  }
  if (input.capabilities.length > 0) return input.capabilities;
  return CAPABILITIES_BY_KIND[kind].filter((c) => counted || c !== COUNT_TOKENS);
}

/**
 * A price in credits per unit: a whole number from 0 to 2^53 - 1. Past that, the public listing
 * (JSON numbers) would show a rounded price, not the one charged.
 */
function checkedPrice(price: bigint | undefined): bigint | undefined {
  if (price === undefined) return undefined;
  if (price < 0n) throw new GatewayError('invalid_request', 'A price cannot be negative.');
  if (price > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new GatewayError('invalid_request', `A price may be at most ${Number.MAX_SAFE_INTEGER} credits per unit, so that the model listing shows it exactly.`);
  }
  return price;
}

/** The first value listed twice, if any. */
function repeated(values: string[]): string | undefined {
  return values.find((v, i) => values.indexOf(v) !== i);
}

const PUBLIC_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

function validate(input: catalogV1.Model, configured: (provider: string) => boolean): KindName {
  const kind = KIND_BY_ENUM.get(input.kind);
  if (!kind) throw new GatewayError('invalid_request', 'A model needs a kind: TEXT, IMAGE or VIDEO.');
  if (!PUBLIC_ID.test(input.id)) {
    throw new GatewayError('invalid_request', 'A model id is 1-128 letters, digits or . _ : / -');
  }
  const allowed = CAPABILITIES_BY_KIND[kind];
  const bad = input.capabilities.find((c) => !allowed.includes(c));
  if (bad !== undefined) throw new GatewayError('invalid_request', `Capability ${bad} does not fit a ${kind} model.`);
  const twice = repeated(input.capabilities);
  if (twice !== undefined) throw new GatewayError('invalid_request', `Capability ${twice} is listed twice.`);
  checkedPrice(input.priceCreditPerUnit);
  const routes = input.routes.length > 0 ? input.routes : [{ provider: input.provider, upstreamModel: input.upstreamModel }];
  if (routes.some((r) => r.provider === '' || r.upstreamModel === '')) {
    throw new GatewayError('invalid_request', 'Every route needs a provider and the provider model name.');
  }
  // A provider this deployment has no credentials for could never serve the model: it would be
  // "stale" forever, telling clients to retry. A typo is refused here instead.
  const unknown = routes.find((r) => !configured(r.provider));
  if (unknown) throw new GatewayError('invalid_request', `Provider ${unknown.provider} is not configured (PROVIDERS).`);
  const sameRoute = repeated(routes.map((r) => `${r.provider}:${r.upstreamModel}`));
  if (sameRoute !== undefined) throw new GatewayError('invalid_request', `The route ${sameRoute} is given twice; give it once, with its priority and weight.`);
  const sizes = input.limits?.imageSizes ?? [];
  if (sizes.some((s) => !SIZE.test(s))) throw new GatewayError('invalid_request', 'Image sizes have the form <width>x<height>.');
  const firstByte = input.limits?.firstByteTimeoutMs ?? 0;
  if (firstByte < 0 || firstByte > MAX_FIRST_BYTE_TIMEOUT_MS) {
    throw new GatewayError('invalid_request', `The first-byte timeout is between 1 and ${MAX_FIRST_BYTE_TIMEOUT_MS} ms (0: the default).`);
  }
  return kind;
}

/**
 * Creates or replaces a model and its routes. `providers` says which providers this deployment
 * has configured, and whether one has a token counter.
 */
export async function upsertModel(
  em: EntityManager,
  input: catalogV1.Model,
  providers: { configured: (provider: string) => boolean; counts: (provider: string) => boolean },
): Promise<StoredModel> {
  const kind = validate(input, providers.configured);
  const counts = providers.counts;
  const routesIn =
    input.routes.length > 0
      ? input.routes
      : [create(catalogV1.RouteSchema, { provider: input.provider, upstreamModel: input.upstreamModel, weight: 1 })];
  const capabilities = capabilitiesOf(input, kind, routesIn.map((r) => r.provider), counts);
  return em.transactional(async (tx) => {
    // One public id names one model: an alias is not taken over by a new model.
    const alias = await tx.findOne(ModelAlias, { alias: input.id });
    if (alias) {
      throw new GatewayError('invalid_request', `${input.id} is an alias of ${alias.modelId}; remove it first (model alias remove --alias ${input.id}).`);
    }
    const existing = await tx.findOne(Model, { id: input.id });
    const first = routesIn[0]!;
    const model = tx.create(
      Model,
      {
        id: input.id,
        kind,
        capabilities,
        price: input.priceCreditPerUnit ?? null,
        enabled: input.enabled,
        provider: first.provider,
        upstreamModel: first.upstreamModel,
        maxOutputTokens: input.limits?.maxOutputTokens || 4096,
        imageSizes: input.limits?.imageSizes ?? [],
        videoFirstFrame: input.limits?.videoFirstFrame ?? false,
        videoLastFrame: input.limits?.videoLastFrame ?? false,
        firstByteTimeoutMs: input.limits?.firstByteTimeoutMs ?? 0,
        createdAt: existing?.createdAt ?? new Date(),
        updatedAt: new Date(),
      },
      { persist: false },
    );
    await tx.upsert(Model, model);
    await tx.nativeDelete(ModelRoute, { modelId: input.id });
    const routes = routesIn.map((r) =>
      tx.create(ModelRoute, { modelId: input.id, provider: r.provider, upstreamModel: r.upstreamModel, priority: r.priority, weight: r.weight || 1 }),
    );
    announceChange(tx, input.id);
    await tx.flush();
    return { model, routes, aliases: await tx.find(ModelAlias, { modelId: input.id }) };
  });
}

async function changeModel(em: EntityManager, id: string, change: (m: Model) => void): Promise<StoredModel> {
  return em.transactional(async (tx) => {
    const model = await tx.findOne(Model, { id });
    if (!model) throw new GatewayError('unknown_model', await noModelMessage(tx, id));
    change(model);
    model.updatedAt = new Date();
    announceChange(tx, id);
    await tx.flush();
    return { model, routes: await tx.find(ModelRoute, { modelId: id }), aliases: await tx.find(ModelAlias, { modelId: id }) };
  });
}

/** Operator commands take a model's own id; given an alias, the message names the model. */
async function noModelMessage(em: EntityManager, id: string): Promise<string> {
  const alias = await em.findOne(ModelAlias, { alias: id });
  return alias ? `${id} is an alias of ${alias.modelId}; give the model's own id.` : `No model ${id}.`;
}

/**
 * Gives a model another public id. The alias must be free: not a model's id, not another model's
 * alias (given again for the same model, it is kept, and the answer is the same).
 */
export async function addAlias(em: EntityManager, modelId: string, alias: string): Promise<StoredModel> {
  if (!PUBLIC_ID.test(alias)) throw new GatewayError('invalid_request', 'An alias is 1-128 letters, digits or . _ : / -, like a model id.');
  try {
    return await addAliasOnce(em, modelId, alias);
  } catch (err) {
    // The same alias added at the same moment elsewhere: the other add won.
    if (isUniqueViolation(err)) throw new GatewayError('invalid_request', `${alias} was just added by another command; see models list.`);
    throw err;
  }
}

function addAliasOnce(em: EntityManager, modelId: string, alias: string): Promise<StoredModel> {
  return em.transactional(async (tx) => {
    const model = await tx.findOne(Model, { id: modelId });
    if (!model) throw new GatewayError('unknown_model', await noModelMessage(tx, modelId));
    if (await tx.findOne(Model, { id: alias })) throw new GatewayError('invalid_request', `${alias} is a model's own id; an alias must be a free public id.`);
    const taken = await tx.findOne(ModelAlias, { alias });
    if (taken && taken.modelId !== modelId) {
      throw new GatewayError('invalid_request', `${alias} is already an alias of ${taken.modelId}; remove it there first (model alias remove --alias ${alias}).`);
    }
    if (!taken) {
      tx.create(ModelAlias, { alias, modelId, createdAt: new Date() });
      announceChange(tx, modelId);
      await tx.flush();
    }
    return { model, routes: await tx.find(ModelRoute, { modelId }), aliases: await tx.find(ModelAlias, { modelId }) };
  });
}

/** Takes an alias away; the model it belonged to is answered. */
export async function removeAlias(em: EntityManager, alias: string): Promise<StoredModel> {
  return em.transactional(async (tx) => {
    const row = await tx.findOne(ModelAlias, { alias });
    if (!row) throw new GatewayError('not_found', `${alias} is not an alias (see models list).`);
    const modelId = row.modelId;
    tx.remove(row);
    announceChange(tx, modelId);
    await tx.flush();
    const model = await tx.findOneOrFail(Model, { id: modelId });
    return { model, routes: await tx.find(ModelRoute, { modelId }), aliases: await tx.find(ModelAlias, { modelId }) };
  });
}

export function setPrice(em: EntityManager, id: string, price: bigint | undefined) {
  checkedPrice(price);
  return changeModel(em, id, (m) => {
    m.price = price ?? null;
  });
}

export function setEnabled(em: EntityManager, id: string, enabled: boolean) {
  return changeModel(em, id, (m) => {
    m.enabled = enabled;
  });
}
