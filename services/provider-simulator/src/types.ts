/** The four upstream providers the simulator imitates; also the first path segment of their routes. */
export type Provider = 'openai' | 'anthropic' | 'google' | 'compat';

export const PROVIDERS: readonly Provider[] = ['openai', 'anthropic', 'google', 'compat'];

export type ModelKind = 'text' | 'image' | 'video';

export type JsonObject = Record<string, unknown>;

export function isProvider(value: string): value is Provider {
  return (PROVIDERS as readonly string[]).includes(value);
}
