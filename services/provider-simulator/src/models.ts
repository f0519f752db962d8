import type { ModelKind, Provider } from './types.ts';

/** A model as the simulator serves it; flags pick special behaviours useful to tests. */
export interface SimModel {
  id: string;
  kind: ModelKind;
  displayName: string;
  /** Unix seconds, stable so listings are deterministic. */
  created: number;
  /** Image model that returns exactly one image whatever `n` asks for. */
  oneImage?: boolean;
  /** Image model that answers with `url` (a simulator path) instead of `b64_json`. */
  urlImage?: boolean;
}

const CREATED = 1_735_689_600; // 2025-01-01T00:00:00Z

/** Infers a model's kind and flags from its id, so tests can serve new ids with `PUT /_sim/models`. */
export function modelFromId(id: string, kind?: ModelKind): SimModel {
  const inferred: ModelKind = /sora|veo|video/i.test(id) ? 'video' : /image|imagen|dall-e/i.test(id) ? 'image' : 'text';
  const model: SimModel = { id, kind: kind ?? inferred, displayName: displayNameOf(id), created: CREATED };
  if (/one-image/i.test(id)) model.oneImage = true;
  if (/url-image/i.test(id)) model.urlImage = true;
  return model;
}

function displayNameOf(id: string): string {
  return id
    .split('-')
    .map((w) => (w === '' ? w : w[0]!.toUpperCase() + w.slice(1)))
    .join(' ');
}

export const DEFAULT_MODEL_IDS: Record<Provider, readonly string[]> = {
  openai: ['gpt-sim-mini', 'gpt-sim-image', 'gpt-sim-one-image', 'gpt-sim-url-image', 'sora-sim'],
  anthropic: ['claude-sim-sonnet', 'claude-sim-haiku'],
  google: ['gemini-sim-flash', 'gemini-sim-image', 'veo-sim'],
  compat: ['compat-sim-chat'],
};

export function defaultModels(provider: Provider): SimModel[] {
  return DEFAULT_MODEL_IDS[provider].map((id) => modelFromId(id));
}
