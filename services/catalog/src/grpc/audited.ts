import { toJson } from '@bufbuild/protobuf';
import { catalogV1 } from '@gw/contracts';
import { appendAudit, type Actor, type AuditDescribe } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';

/** What a catalog change records: it changes no account. */
interface CatalogEntry {
  details: Record<string, unknown>;
}

const model = (m: catalogV1.Model | undefined) => (m ? toJson(catalogV1.ModelSchema, m) : null);

/** The catalog's administrative rpcs and what each records (with service-kit's `audited`). */
export const CATALOG_AUDITED: Record<string, AuditDescribe<CatalogEntry>> = {
  upsertModel: (req: catalogV1.UpsertModelRequest) => ({ details: { model: model(req.model) } }),
  setPrice: (req: catalogV1.SetPriceRequest) => ({ details: { model_id: req.modelId, price_credit_per_unit: req.priceCreditPerUnit ?? null } }),
  setEnabled: (req: catalogV1.SetEnabledRequest) => ({ details: { model_id: req.modelId, enabled: req.enabled } }),
  setListingHidden: (req: catalogV1.SetListingHiddenRequest) => ({ details: { hidden: req.hidden } }),
  addAlias: (req: catalogV1.AddAliasRequest) => ({ details: { model_id: req.modelId, alias: req.alias } }),
  removeAlias: (req: catalogV1.RemoveAliasRequest, res: catalogV1.RemoveAliasResponse) => ({ details: { alias: req.alias, model_id: res.model?.id ?? '' } }),
  syncProviders: (_req: unknown, res: catalogV1.SyncProvidersResponse) => ({
    details: { providers: res.providers.map((p) => ({ provider: p.provider, served_models: p.servedModels, last_error: p.lastError })) },
  }),
};

export const recordCatalogAudit = (em: EntityManager, who: Actor, action: string, entry: CatalogEntry) => appendAudit(em, who, null, action, entry.details);
