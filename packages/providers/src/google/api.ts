/**
 * Gemini API wire basics. Base URL as the SDK takes it:
 * `https://generativelanguage.googleapis.com/v1beta`. Auth: `x-goog-api-key` (never `?key=`, which
 * would put the secret into URLs and logs).
 */
export function googleAuthHeaders(apiKey: string): Record<string, string> {
  return { 'x-goog-api-key': apiKey };
}

/** A model's resource path; takes `gemini-x` or `models/gemini-x`. */
function modelPath(model: string): string {
  return `/models/${encodeURIComponent(model.replace(/^models\//, ''))}`;
}

export const GOOGLE_PATHS = {
  models: '/models',
  generateContent: (model: string) => `${modelPath(model)}:generateContent`,
  streamGenerateContent: (model: string) => `${modelPath(model)}:streamGenerateContent?alt=sse`,
  countTokens: (model: string) => `${modelPath(model)}:countTokens`,
  predictLongRunning: (model: string) => `${modelPath(model)}:predictLongRunning`,
  /** A long-running operation, by its full name (`models/<m>/operations/<id>`). */
  operation: (name: string) => `/${name}`,
  /** The `model` field countTokens wants inside `generateContentRequest`. */
  modelName: (model: string) => `models/${model.replace(/^models\//, '')}`,
} as const;

/** Operation names go into URL paths: plain segments only, nothing that could climb out. */
export function isSafeOperationName(name: string): boolean {
  return /^[\w.-]+(\/[\w.-]+)*$/.test(name) && name.split('/').every((part) => part !== '.' && part !== '..');
}
