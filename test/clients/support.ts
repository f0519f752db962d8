import type { RunningSystem } from '../../scripts/system.ts';
import { seedDemoModels, waitForListing } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

/**
 * The public model names real clients ask for, routed to the simulator's models with aliases (one
 * `pnpm admin model alias add` each), as an operator would for a client that renames models.
 */
export const CLIENT_ALIASES: Array<[model: string, alias: string]> = [
  ['claude-sim-sonnet', 'claude-sonnet-4-5'],
  ['claude-sim-sonnet', 'claude-haiku-4-5'],
  // A name of the operator's own (the Anthropic SDK warns about retired Claude names).
  ['claude-sim-sonnet', 'team-claude'],
  ['gpt-sim-mini', 'gpt-5-codex'],
  ['gpt-sim-mini', 'gpt-5-mini'],
  ['gemini-sim-flash', 'gemini-2.5-flash'],
];

export interface ClientSystem {
  system: RunningSystem;
  apiKey: string;
  accountId: string;
  /** `http://127.0.0.1:<port>/v1`: what OpenAI-style clients take as their base URL. */
  baseUrl: string;
  /** `http://127.0.0.1:<port>`: what Anthropic-style clients take (they append `/v1` themselves). */
  origin: string;
}

/** A started system (simulator upstream) with the demo models, the client aliases and a funded key. */
export async function startClientSystem(extra: Parameters<typeof startTestSystem>[0] = {}): Promise<ClientSystem> {
  const system = await startTestSystem(extra);
  await seedDemoModels(system);
  for (const [model, alias] of CLIENT_ALIASES) await admin(system, 'model', 'alias', 'add', '--model', model, '--alias', alias);
  const { apiKey, accountId } = await fundedAccount(system, 1_000_000_000);
  // One account serves a whole file of clients, whose requests follow each other within
  // milliseconds: past the default 50 a second. What these files test is each client, not the limit.
  await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '100000', '--per-minute', '10000000');
  await waitForListing(system, apiKey, ['gpt-sim-mini', 'claude-sim-sonnet', 'gemini-sim-flash', ...CLIENT_ALIASES.map(([, alias]) => alias)], 30_000);
  return { system, apiKey, accountId, baseUrl: system.baseUrl, origin: new URL(system.baseUrl).origin };
}

/** The prompt that makes the simulator call the request's (first) tool. */
export const WEATHER_PROMPT = 'What is the weather in Hanoi? Use the tool.';
/** What the tool answers; the simulator's next turn quotes it. */
export const WEATHER_RESULT = 'Sunny and thirty one degrees';
/** The simulator's reply after a tool result quotes it. */
export const QUOTES_RESULT = /sunny and thirty one degrees/i;
