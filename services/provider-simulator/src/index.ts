export { buildSimulator, type SimulatorOptions } from './app.ts';
export { DEFAULT_API_KEYS } from './auth.ts';
export { DEFAULT_MODEL_IDS } from './models.ts';
export type { Provider } from './types.ts';
