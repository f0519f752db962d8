/**
 * Anthropic wire basics. Base URL as the SDK takes it: `https://api.anthropic.com` (paths carry
 * `/v1`). Auth: `x-api-key`, plus the API version every call must name.
 */
export const ANTHROPIC_VERSION = '2023-06-01';

export function anthropicAuthHeaders(apiKey: string): Record<string, string> {
  return { 'x-api-key': apiKey, 'anthropic-version': ANTHROPIC_VERSION };
}

export const ANTHROPIC_PATHS = {
  messages: '/v1/messages',
  countTokens: '/v1/messages/count_tokens',
  models: '/v1/models',
} as const;
