/**
 * OpenAI wire basics. Base URL as the SDK takes it: `https://api.openai.com/v1`.
 * Auth: `Authorization: Bearer <key>`.
 */
export function openAiAuthHeaders(apiKey: string): Record<string, string> {
  return { authorization: `Bearer ${apiKey}` };
}

export const OPENAI_PATHS = {
  chatCompletions: '/chat/completions',
  responses: '/responses',
  responsesInputTokens: '/responses/input_tokens',
  models: '/models',
  imageGenerations: '/images/generations',
  imageEdits: '/images/edits',
  videos: '/videos',
  video: (id: string) => `/videos/${encodeURIComponent(id)}`,
  videoContent: (id: string) => `/videos/${encodeURIComponent(id)}/content`,
} as const;
