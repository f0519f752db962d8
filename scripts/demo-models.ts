import { catalogV1 } from '@gw/contracts';
import type { MessageInitShape } from '@bufbuild/protobuf';

type ModelInit = MessageInitShape<typeof catalogV1.ModelSchema>;
const { TEXT, IMAGE, VIDEO } = catalogV1.ModelKind;
const TEXT_ALL = ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'];

/**
 * Demo models served by the provider simulator, one per provider and kind. Prices are credits
 * (VND) per million tokens, per image or per second. The OpenAI-compatible provider has no token
 * counter, so its model does not offer `messages/count_tokens`.
 */
export const DEMO_MODELS: ModelInit[] = [
  { id: 'gpt-sim-mini', kind: TEXT, capabilities: TEXT_ALL, priceCreditPerUnit: 15_000n, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-mini' },
  { id: 'claude-sim-sonnet', kind: TEXT, capabilities: TEXT_ALL, priceCreditPerUnit: 75_000n, enabled: true, provider: 'anthropic', upstreamModel: 'claude-sim-sonnet' },
  { id: 'gemini-sim-flash', kind: TEXT, capabilities: TEXT_ALL, priceCreditPerUnit: 7_500n, enabled: true, provider: 'google', upstreamModel: 'gemini-sim-flash' },
  { id: 'compat-sim-chat', kind: TEXT, capabilities: ['chat/completions', 'chat', 'messages', 'responses'], priceCreditPerUnit: 3_000n, enabled: true, provider: 'compat', upstreamModel: 'compat-sim-chat' },
  { id: 'gpt-sim-image', kind: IMAGE, capabilities: ['images/generations', 'images/edits'], priceCreditPerUnit: 1_000n, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-image' },
  { id: 'gemini-sim-image', kind: IMAGE, capabilities: ['images/generations', 'images/edits'], priceCreditPerUnit: 800n, enabled: true, provider: 'google', upstreamModel: 'gemini-sim-image' },
  { id: 'sora-sim', kind: VIDEO, capabilities: ['videos/generations'], priceCreditPerUnit: 5_000n, enabled: true, provider: 'openai', upstreamModel: 'sora-sim' },
  { id: 'veo-sim', kind: VIDEO, capabilities: ['videos/generations'], priceCreditPerUnit: 8_000n, enabled: true, provider: 'google', upstreamModel: 'veo-sim' },
];
