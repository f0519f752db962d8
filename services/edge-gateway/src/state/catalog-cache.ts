import { billingV1, catalogV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { RouteHealthView } from './route-health.ts';
import { quoteClientValue } from '../http/quote.ts';

/** A route the request may use now: its provider's listing is fresh and serves the model. */
export interface LiveRoute {
  provider: string;
  upstreamModel: string;
  priority: number;
  weight: number;
  /** The text dialects its provider speaks (catalog's `protocols`); empty when not known. */
  textDialects: readonly string[];
}

/** What a generation request needs to know about its model. */
export interface ResolvedModel {
  /** The model's own id: what billing records and the routes serve. */
  id: string;
  /** The public id the request named: the model's id or one of its aliases. */
  requested: string;
  kind: 'TEXT' | 'IMAGE' | 'VIDEO';
  unit: billingV1.BillingUnit;
  price: bigint;
  routes: LiveRoute[];
  limits: { maxOutputTokens: number; imageSizes: string[]; videoFirstFrame: boolean; videoLastFrame: boolean; firstByteTimeoutMs?: number };
}

const KIND = {
  [catalogV1.ModelKind.TEXT]: { kind: 'TEXT', unit: billingV1.BillingUnit.MILLION_TOKENS, billing_unit: 'million_tokens' },
  [catalogV1.ModelKind.IMAGE]: { kind: 'IMAGE', unit: billingV1.BillingUnit.IMAGE, billing_unit: 'image' },
  [catalogV1.ModelKind.VIDEO]: { kind: 'VIDEO', unit: billingV1.BillingUnit.SECOND, billing_unit: 'second' },
} as const;

function routesOf(m: catalogV1.Model): catalogV1.Route[] {
  return m.routes.length > 0 ? m.routes : [{ provider: m.provider, upstreamModel: m.upstreamModel, priority: 0, weight: 1 } as catalogV1.Route];
}

/**
 * The catalog as this gateway replica knows it: a snapshot from `catalog`, replaced whenever a
 * `catalog.model.changed` event arrives. Resolution and listing are pure reads of memory, so a
 * request costs no catalog round trip. Staleness is judged here, from the sync times in the
 * snapshot and this replica's clock.
 */
export class CatalogCache {
  #snapshot: catalogV1.GetSnapshotResponse | null = null;
  #models = new Map<string, catalogV1.Model>();
  /** Every public id, the models' own and their aliases, to its model. */
  #byPublicId = new Map<string, catalogV1.Model>();
  #syncs = new Map<string, catalogV1.ProviderSync>();
  /** The text dialects of each provider, from the snapshot. */
  #dialects = new Map<string, readonly string[]>();
  /** Served upstream models per provider, as sets: resolution runs on every request. */
  #served = new Map<string, Set<string>>();
  readonly #now: () => number;
  /** The text routes the deployment's route health has opened. */
  readonly routeHealth: RouteHealthView;

  constructor(now: () => number = Date.now, routeHealth: RouteHealthView = new RouteHealthView(now)) {
    this.#now = now;
    this.routeHealth = routeHealth;
  }

  get loaded(): boolean {
    return this.#snapshot !== null;
  }

  replace(snapshot: catalogV1.GetSnapshotResponse): void {
    this.#snapshot = snapshot;
    this.#models = new Map(snapshot.models.map((m) => [m.id, m]));
    this.#byPublicId = new Map(this.#models);
    for (const m of snapshot.models) for (const alias of m.aliases) if (!this.#models.has(alias)) this.#byPublicId.set(alias, m);
    this.#syncs = new Map(snapshot.providers.map((p) => [p.provider, p]));
    this.#served = new Map(snapshot.providers.map((p) => [p.provider, new Set(p.servedModels)]));
    this.#dialects = new Map(snapshot.protocols.map((p) => [p.provider, p.textDialects]));
  }

  #fresh(provider: string): catalogV1.ProviderSync | null {
    const sync = this.#syncs.get(provider);
    if (!sync || sync.lastSuccessUnixMs === 0n || !this.#snapshot) return null;
    return this.#now() - Number(sync.lastSuccessUnixMs) <= Number(this.#snapshot.maxSyncAgeMs) ? sync : null;
  }

  /** Routes that are fresh and served now; `stale` when no route has fresh evidence at all. */
  #live(m: catalogV1.Model): { routes: LiveRoute[]; stale: boolean } {
    const routes: LiveRoute[] = [];
    let anyFresh = false;
    for (const r of routesOf(m)) {
      const sync = this.#fresh(r.provider);
      if (!sync) continue;
      anyFresh = true;
      if (this.#served.get(r.provider)?.has(r.upstreamModel)) {
        routes.push({ provider: r.provider, upstreamModel: r.upstreamModel, priority: r.priority, weight: r.weight || 1, textDialects: this.#dialects.get(r.provider) ?? [] });
      }
    }
    return { routes, stale: !anyFresh };
  }

  /**
   * Seconds until the model serves again when every live route of it is open (route health,
   * judged by the text service across accounts and with its own probes); 0 when one serves. Such
   * a model is left out of the listing and refused at once, with no hold taken (spec 7.2: it
   * reappears in the listing when served again). One account's failures never open a route.
   */
  #coolingFor(routes: readonly LiveRoute[]): number {
    return this.routeHealth.restingFor(routes);
  }

  /**
   * Resolves (model, endpoint) to a route set or exactly one error, in the order of DECISIONS.md
   * step 5. On `POST /chat` a disabled model is `unknown_model` (spec 4.3).
   */
  resolve(requested: string, endpoint: string): ResolvedModel {
    // Not loaded yet (catalog away since this replica started): no model is known, but that is
    // no reason to tell a client its model does not exist (a 400 it must not retry).
    if (!this.#snapshot) throw new GatewayError('upstream_error', 'The model catalog is not loaded yet. Retry in a few seconds.');
    const m = this.#byPublicId.get(requested);
    // Messages name the model as the client did; cool-downs are the model's, whatever its name.
    const modelId = requested;
    const kind = m ? KIND[m.kind as keyof typeof KIND] : undefined;
    // On /chat a disabled model does not exist (spec 4.3), whatever else it could not do.
    if (!m || !kind || (endpoint === 'chat' && !m.enabled)) throw new GatewayError('unknown_model', `The model ${quoteClientValue(modelId)} does not exist.`);
    if (!m.capabilities.includes(endpoint)) {
      throw new GatewayError('capability_not_supported', `The model ${modelId} cannot be used with /${endpoint}.`);
    }
    if (!m.enabled) throw new GatewayError('model_disabled', `The model ${modelId} is disabled.`);
    if (m.priceCreditPerUnit === undefined) {
      throw new GatewayError('pricing_not_configured', `The model ${modelId} has no price configured yet.`);
    }
    const live = this.#live(m);
    if (live.stale) {
      throw new GatewayError('provider_catalog_stale', `There is no recent evidence that ${modelId} is served. Retry in a few minutes.`);
    }
    if (live.routes.length === 0) {
      throw new GatewayError('model_temporarily_unavailable', `The model ${modelId} is temporarily unavailable. Nothing was charged.`);
    }
    const cooling = this.#coolingFor(live.routes);
    if (cooling > 0) {
      throw new GatewayError('model_temporarily_unavailable', `The model ${modelId} is temporarily unavailable after repeated provider failures. Nothing was charged.`, {
        retry_after_seconds: cooling,
      });
    }
    return {
      id: m.id,
      requested,
      kind: kind.kind,
      unit: kind.unit,
      price: m.priceCreditPerUnit,
      routes: live.routes,
      limits: {
        maxOutputTokens: m.limits?.maxOutputTokens ?? 4096,
        imageSizes: m.limits?.imageSizes ?? [],
        videoFirstFrame: m.limits?.videoFirstFrame ?? false,
        videoLastFrame: m.limits?.videoLastFrame ?? false,
        firstByteTimeoutMs: m.limits?.firstByteTimeoutMs ?? 0,
      },
    };
  }

  /**
   * Spec 4.1: enabled, priced and currently served models; 503 when the listing is hidden. Each
   * alias is an item of its own (with `alias_of`), so a client that checks its model name in the
   * listing finds the name it uses. Beside the contract's five fields, every item carries the
   * OpenAI SDK's (`object`, `created`, `owned_by`) and, for `anthropic` (a request with an
   * `anthropic-version` header), the Anthropic SDK's (`type`, `display_name`, `created_at`).
   */
  listing(anthropic = false): ListingItem[] {
    if (!this.#snapshot) throw new GatewayError('upstream_error', 'The model catalog is not loaded yet.');
    if (this.#snapshot.listingHidden) throw new GatewayError('model_catalog_disabled', 'The model listing is currently hidden.');
    return this.#snapshot.models
      .filter((m) => {
        if (!m.enabled || m.priceCreditPerUnit === undefined || !(m.kind in KIND)) return false;
        const { routes } = this.#live(m);
        return routes.length > 0 && this.#coolingFor(routes) === 0;
      })
      .flatMap((m) => [listingItem(m, m.id, anthropic), ...m.aliases.filter((a) => this.#byPublicId.get(a) === m).map((a) => listingItem(m, a, anthropic))]);
  }

  /** One item of the listing, by any of its public ids; 404 `not_found` when it is not listed. */
  listed(publicId: string, anthropic = false): ListingItem {
    const item = this.listing(anthropic).find((i) => i.id === publicId);
    if (!item) throw new GatewayError('not_found', `The model ${JSON.stringify(publicId)} is not listed. GET /v1/models lists the models you can use.`);
    return item;
  }
}

export interface ListingItem {
  id: string;
  kind: string;
  capabilities: string[];
  price_credit_per_unit: number;
  billing_unit: string;
  object: 'model';
  created: number;
  owned_by: string;
  alias_of?: string;
  type?: 'model';
  display_name?: string;
  created_at?: string;
}

function listingItem(m: catalogV1.Model, id: string, anthropic: boolean): ListingItem {
  const k = KIND[m.kind as keyof typeof KIND];
  const createdMs = Number(m.createdUnixMs);
  return {
    id,
    kind: k.kind,
    capabilities: m.capabilities,
    price_credit_per_unit: Number(m.priceCreditPerUnit),
    billing_unit: k.billing_unit,
    object: 'model',
    created: Math.floor(createdMs / 1000),
    owned_by: routesOf(m)[0]!.provider,
    ...(id === m.id ? {} : { alias_of: m.id }),
    ...(anthropic ? { type: 'model' as const, display_name: id, created_at: new Date(createdMs).toISOString() } : {}),
  };
}
