import { defaultModels, type SimModel } from './models.ts';
import { RequestLog } from './request-log.ts';
import { type Provider, PROVIDERS } from './types.ts';
import { VideoJobStore } from './videos/jobs.ts';
import type { ImageFormat } from './media/images.ts';

/** Settings applied to every request for one model (or `*`: every model of the provider). */
export interface ModelSettings {
  latencyMs?: number;
  /** A fault name as in the `fault=` directive. */
  fault?: string;
  /** Fraction (0..1] of requests that get `fault`; applied deterministically (every 1/rate-th request). */
  failRate?: number;
  chunkDelayMs?: number;
  videoDelayMs?: number;
}

/** An image answered by URL (`gpt-sim-url-image`): only its recipe is kept, bytes come from the cache. */
export interface StoredImage {
  format: ImageFormat;
  width: number;
  height: number;
  colorIndex: number;
}

const MAX_STORED_IMAGES = 2_000;

/** Everything mutable in the simulator; the control API reads and changes it. */
export class SimulatorState {
  readonly log: RequestLog;
  readonly videos = new VideoJobStore();
  readonly defaultVideoDelayMs: number;
  private servedByProvider = new Map<Provider, Map<string, SimModel>>();
  private settings = new Map<string, ModelSettings>();
  private listingFaults = new Map<Provider, number>();
  private faultCounters = new Map<string, number>();
  private images = new Map<string, StoredImage>();

  constructor(opts: { requestLogSize: number; videoDelayMs: number }) {
    this.log = new RequestLog(opts.requestLogSize);
    this.defaultVideoDelayMs = opts.videoDelayMs;
    this.resetModels();
  }

  reset(): void {
    this.resetModels();
    this.settings.clear();
    this.listingFaults.clear();
    this.faultCounters.clear();
    this.images.clear();
    this.videos.clear();
    this.log.clear();
  }

  private resetModels(): void {
    for (const p of PROVIDERS) this.setServed(p, defaultModels(p));
  }

  served(provider: Provider): SimModel[] {
    return [...this.servedMap(provider).values()];
  }

  servedModel(provider: Provider, id: string): SimModel | undefined {
    return this.servedMap(provider).get(id);
  }

  setServed(provider: Provider, models: SimModel[]): void {
    this.servedByProvider.set(provider, new Map(models.map((m) => [m.id, m])));
  }

  private servedMap(provider: Provider): Map<string, SimModel> {
    return this.servedByProvider.get(provider) ?? new Map();
  }

  putSettings(provider: Provider, model: string, settings: ModelSettings): void {
    this.settings.set(`${provider}/${model}`, settings);
  }

  deleteSettings(provider: Provider, model: string): void {
    this.settings.delete(`${provider}/${model}`);
  }

  clearSettings(): void {
    this.settings.clear();
    this.listingFaults.clear();
    this.faultCounters.clear();
  }

  /** The provider-wide `*` settings overlaid with the model's own. */
  settingsFor(provider: Provider, model: string): ModelSettings {
    const wide = this.settings.get(`${provider}/*`);
    const own = this.settings.get(`${provider}/${model}`);
    if (!wide) return own ?? {};
    return own ? { ...wide, ...own } : wide;
  }

  allSettings(): Record<string, ModelSettings> {
    return Object.fromEntries(this.settings);
  }

  /** Deterministic sampling for `failRate`: request n fails when floor(n*rate) steps up. */
  sampleFailure(key: string, rate: number): boolean {
    const n = (this.faultCounters.get(key) ?? 0) + 1;
    this.faultCounters.set(key, n);
    return Math.floor(n * rate) > Math.floor((n - 1) * rate);
  }

  setListingFault(provider: Provider, status: number | undefined): void {
    if (status === undefined) this.listingFaults.delete(provider);
    else this.listingFaults.set(provider, status);
  }

  listingFault(provider: Provider): number | undefined {
    return this.listingFaults.get(provider);
  }

  allListingFaults(): Record<string, number> {
    return Object.fromEntries(this.listingFaults);
  }

  storeImage(id: string, image: StoredImage): void {
    this.images.set(id, image);
    if (this.images.size > MAX_STORED_IMAGES) {
      const oldest = this.images.keys().next();
      if (!oldest.done) this.images.delete(oldest.value);
    }
  }

  storedImage(id: string): StoredImage | undefined {
    return this.images.get(id);
  }
}
