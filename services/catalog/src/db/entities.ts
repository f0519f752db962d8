import { defineEntity, p } from '@mikro-orm/postgresql';

/** A public model: what it is, what it costs, what the gateway checks against it. */
const ModelSchema = defineEntity({
  name: 'Model',
  tableName: 'model',
  properties: {
    id: p.text().primary(),
    kind: p.text(),
    capabilities: p.array(),
    /** Credits per billing unit; null while no price is configured. */
    price: p.bigint().nullable(),
    enabled: p.boolean(),
    /** The first route, kept on the model for reading convenience. */
    provider: p.text(),
    upstreamModel: p.text(),
    maxOutputTokens: p.integer(),
    imageSizes: p.array(),
    videoFirstFrame: p.boolean(),
    videoLastFrame: p.boolean(),
    /** Text: an answer's first-event deadline per route (ms; streamed, and complete answers of every route but the last); 0 = the text service's default. */
    firstByteTimeoutMs: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export class Model extends ModelSchema.class {}
ModelSchema.setClass(Model);

/** One upstream destination of a model; lower priority first, weight among equals. */
const ModelRouteSchema = defineEntity({
  name: 'ModelRoute',
  tableName: 'model_route',
  properties: {
    modelId: p.text().primary(),
    provider: p.text().primary(),
    upstreamModel: p.text().primary(),
    priority: p.integer(),
    weight: p.integer(),
  },
});
export class ModelRoute extends ModelRouteSchema.class {}
ModelRouteSchema.setClass(ModelRoute);

/** Another public id of a model: resolved, listed and billed as that model. */
const ModelAliasSchema = defineEntity({
  name: 'ModelAlias',
  tableName: 'model_alias',
  properties: {
    alias: p.text().primary(),
    modelId: p.text(),
    createdAt: p.datetime(),
  },
});
export class ModelAlias extends ModelAliasSchema.class {}
ModelAliasSchema.setClass(ModelAlias);

/** The latest evidence of which upstream models a provider serves. */
const ProviderSyncSchema = defineEntity({
  name: 'ProviderSync',
  tableName: 'provider_sync',
  properties: {
    provider: p.text().primary(),
    lastAttemptAt: p.datetime(),
    lastSuccessAt: p.datetime().nullable(),
    servedModels: p.array(),
    lastError: p.text().nullable(),
  },
});
export class ProviderSync extends ProviderSyncSchema.class {}
ProviderSyncSchema.setClass(ProviderSync);

/** Catalog-wide operator settings, one row per name (e.g. `listing_hidden`). */
const SettingSchema = defineEntity({
  name: 'Setting',
  tableName: 'setting',
  properties: {
    name: p.text().primary(),
    value: p.json<unknown>(),
    updatedAt: p.datetime(),
  },
});
export class Setting extends SettingSchema.class {}
SettingSchema.setClass(Setting);

export const catalogEntities = [Model, ModelRoute, ModelAlias, ProviderSync, Setting];
