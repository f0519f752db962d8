import type { Command } from 'commander';
import type { View } from './output.ts';

/**
 * What each command does, by its path: one place for the help texts, so that `pnpm admin --help`
 * and `pnpm admin <group> --help` describe every command (a command that gives its own
 * description keeps it).
 */
const DESCRIPTIONS: Record<string, string> = {
  account: 'accounts: create, list, show, rate limits',
  'account create': 'creates an account (its wallet starts at 0 credits; top it up with wallet top-up)',
  'account list': 'lists every account with its balance, newest first',
  'account show': 'shows one account: name, balance, rate limits and its API keys',
  'account rate-limit': "the account's request rate limits",
  'account rate-limit set': 'sets the requests per second and per minute (0 = the default)',
  wallet: 'wallets: top up, show the balance',
  'wallet top-up': 'adds credits; the same --reference again moves nothing',
  'wallet show': "prints the account's balance in credits",
  key: 'API keys: create, list, revoke, limits',
  'key create': 'creates an API key and prints it, the only time its plaintext is shown',
  'key revoke': 'revokes a key at once (every gateway refuses it within a second)',
  'key list': "lists an account's keys (id, name, prefix and last four, times; never the plaintext)",
  'key limit': 'per-key limits on spending, requests or tokens',
  'key limit set': 'sets a limit: --type spending|requests|tokens --period daily|monthly|lifetime --value <n>',
  'key limit clear': 'removes a limit',
  models: 'the model catalog',
  'models list': 'lists every model with its kind, price, routes and state',
  model: 'one model: create or change, price, enable or disable',
  'model upsert': 'creates or replaces a model: its kind, routes to providers, price and limits',
  'model price': 'sets (--credits) or removes (--clear) the price per unit',
  'model enable': 'serves the model again',
  'model disable': 'stops serving the model until it is enabled again',
  'model alias add': 'gives a model another public id (--model <id> --alias <public id>)',
  'model alias remove': 'removes an alias (--alias <public id>)',
  catalog: 'catalog-wide operations',
  switch: 'operator switches: maintenance and pausing AI requests',
  'switch show': 'prints both switches',
  'switch set': 'turns a switch on or off: maintenance on|off, ai-requests on|off',
  reconcile: 'keys blocked because a provider reported success without usage',
  'reconcile list': 'lists the blocked keys and the request that blocked each',
  'reconcile resolve': 'unblocks a key, optionally charging the unreported usage (--charge)',
  usage: "prints a key's usage records, newest first",
  ledger: 'the credit ledger',
  user: 'members of the account dashboard',
};

/** Gives every command listed above its description (walks the whole tree; others keep their own). */
export function describeAll(program: Command): void {
  const walk = (cmd: Command, path: string[]) => {
    for (const sub of cmd.commands) {
      const here = [...path, sub.name()];
      const text = DESCRIPTIONS[here.join(' ')];
      if (text !== undefined) sub.description(text);
      walk(sub, here);
    }
  };
  walk(program, []);
}

/** Every command as `a b c` paths with its description (for tests and the README). */
export function commandTree(program: Command): Array<{ path: string; description: string }> {
  const out: Array<{ path: string; description: string }> = [];
  const walk = (cmd: Command, path: string[]) => {
    for (const sub of cmd.commands) {
      const here = [...path, sub.name()];
      out.push({ path: here.join(' '), description: sub.description() });
      walk(sub, here);
    }
  };
  walk(program, []);
  return out;
}

type Route = { provider: string; upstream_model: string; priority: number; weight: number };

/** How results read as text: the columns of the model table and routes as `provider:model`. */
export const VIEW: View = {
  columns: {
    models: ['id', 'kind', 'enabled', 'price_credit_per_unit', 'aliases', 'routes'],
    // `routes health` (--json has every field).
    routes: ['provider', 'upstream_model', 'state', 'reason', 'since', 'next_probe_at', 'requests', 'error_rate', 'failing_accounts', 'latency_p50_ms', 'latency_p99_ms', 'last_error'],
    // `alert deliveries` and `audit` (--json has the payloads too).
    deliveries: ['delivery_id', 'type', 'status', 'attempts', 'created_at', 'next_attempt_at', 'delivered_at', 'last_error'],
    events: ['at', 'actor', 'origin', 'action', 'details'],
  },
  format: {
    routes: (v) =>
      Array.isArray(v) && v.length > 0
        ? (v as Route[]).map((r) => `${r.provider}:${r.upstream_model}${r.priority !== 0 || r.weight !== 1 ? ` (priority ${r.priority}, weight ${r.weight})` : ''}`).join(', ')
        : '-',
  },
};
