import { catalogV1 } from '@gw/contracts';
import type { RouteRef } from '@gw/providers';
import type { Logger } from '@gw/service-kit';

/** The catalog's event for any change a cache of it must follow. */
export const CATALOG_CHANGED_SUBJECT = 'catalog.model.changed';

/**
 * The text routes live models use: every route of every enabled text model (a model without
 * routes is served by its provider and upstream model). A deleted or disabled model serves no
 * request, so its routes are not live unless another model uses them too.
 */
export function liveTextRoutes(snapshot: Pick<catalogV1.GetSnapshotResponse, 'models'>): RouteRef[] {
  return snapshot.models
    .filter((m) => m.kind === catalogV1.ModelKind.TEXT && m.enabled)
    .flatMap((m) => (m.routes.length > 0 ? m.routes : [{ provider: m.provider, upstreamModel: m.upstreamModel }]))
    .map((r) => ({ provider: r.provider, upstreamModel: r.upstreamModel }));
}

export interface CatalogFollowerOptions {
  /** The catalog's snapshot (catalog `GetSnapshot`). */
  load: () => Promise<Pick<catalogV1.GetSnapshotResponse, 'models'>>;
  /** Given the live routes after every successful load. */
  retain: (routes: RouteRef[]) => Promise<void>;
  logger: Logger;
  /** Reloads this often besides on catalog changes (a missed event is caught up). */
  refreshMs: number;
}

/**
 * Keeps route health to the routes live models use: loads the catalog now, whenever `reload` is
 * called (on each `catalog.model.changed`), and every `refreshMs`. Bursts of changes cost one load
 * in flight and one queued behind it. A load that fails changes nothing: until the catalog
 * answers, every route is kept (and probed) as before.
 */
export class CatalogFollower {
  readonly #opts: CatalogFollowerOptions;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: CatalogFollowerOptions) {
    this.#opts = opts;
  }

  start(): void {
    void this.reload();
    this.#timer ??= setInterval(() => void this.reload(), this.#opts.refreshMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  reload(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#opts.retain(liveTextRoutes(await this.#opts.load()));
        } catch (err) {
          this.#opts.logger.warn({ err }, 'catalog reload for route health failed');
        }
      } while (this.#again);
    })().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }
}
