import { catalogV1 } from '@gw/contracts';
import type { MessageInitShape } from '@bufbuild/protobuf';

type ModelInit = MessageInitShape<typeof catalogV1.ModelSchema>;
const { TEXT, IMAGE, VIDEO } = catalogV1.ModelKind;
const TEXT_ALL = ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'];
const IMAGE_ALL = ['images/generations', 'images/edits'];
/** The sizes gpt-image models accept; Gemini maps any `<w>x<h>` onto an aspect ratio, so it declares none. */
const GPT_IMAGE_SIZES = ['1024x1024', '1024x1536', '1536x1024'];

/**
 * Demo models served by the provider simulator, one per provider and kind, plus the simulator's
 * image models that always answer one image (`gpt-sim-one-image`) or answer with URLs
 * (`gpt-sim-url-image`). Prices are credits (VND) per million tokens, per image or per second.
 * The OpenAI-compatible provider has no token counter, so its model does not offer
 * `messages/count_tokens`.
 */
export const DEMO_MODELS: ModelInit[] = [
  { id: 'gpt-sim-mini', kind: TEXT, capabilities: TEXT_ALL, priceCreditPerUnit: 15_000n, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-mini' },
  { id: 'claude-sim-sonnet', kind: TEXT, capabilities: TEXT_ALL, priceCreditPerUnit: 75_000n, enabled: true, provider: 'anthropic', upstreamModel: 'claude-sim-sonnet' },
  { id: 'gemini-sim-flash', kind: TEXT, capabilities: TEXT_ALL, priceCreditPerUnit: 7_500n, enabled: true, provider: 'google', upstreamModel: 'gemini-sim-flash' },
  { id: 'compat-sim-chat', kind: TEXT, capabilities: ['chat/completions', 'chat', 'messages', 'responses'], priceCreditPerUnit: 3_000n, enabled: true, provider: 'compat', upstreamModel: 'compat-sim-chat' },
  { id: 'gpt-sim-image', kind: IMAGE, capabilities: IMAGE_ALL, priceCreditPerUnit: 1_000n, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-image', limits: { imageSizes: GPT_IMAGE_SIZES } },
  { id: 'gemini-sim-image', kind: IMAGE, capabilities: IMAGE_ALL, priceCreditPerUnit: 800n, enabled: true, provider: 'google', upstreamModel: 'gemini-sim-image' },
  { id: 'gpt-sim-one-image', kind: IMAGE, capabilities: IMAGE_ALL, priceCreditPerUnit: 600n, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-one-image' },
  { id: 'gpt-sim-url-image', kind: IMAGE, capabilities: IMAGE_ALL, priceCreditPerUnit: 700n, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-url-image' },
  // Sora takes a first frame (`input_reference`) but no last frame; Veo takes both.
  { id: 'sora-sim', kind: VIDEO, capabilities: ['videos/generations'], priceCreditPerUnit: 5_000n, enabled: true, provider: 'openai', upstreamModel: 'sora-sim', limits: { videoFirstFrame: true, videoLastFrame: false } },
  { id: 'veo-sim', kind: VIDEO, capabilities: ['videos/generations'], priceCreditPerUnit: 8_000n, enabled: true, provider: 'google', upstreamModel: 'veo-sim', limits: { videoFirstFrame: true, videoLastFrame: true } },
];
