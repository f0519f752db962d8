/**
 * Any OpenAI-compatible server. Base URL: `<host>/v1`. Auth: `Authorization: Bearer <key>`. Only the
 * two endpoints every such server has are used: chat completions and the model list.
 */
export function compatAuthHeaders(apiKey: string): Record<string, string> {
  return { authorization: `Bearer ${apiKey}` };
}
