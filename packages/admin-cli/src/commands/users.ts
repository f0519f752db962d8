import { GatewayError, isErrorCode } from '@gw/errors';
import type { Command } from 'commander';
import { actorMetadata, localRun, UnreachableError, type Clients } from '../clients.ts';
import { UsageError } from '../output.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

/**
 * Members of the account dashboard live in the console (it owns their passwords and sessions), so
 * these commands talk to the console's operator endpoint over HTTP with the shared
 * CONSOLE_ADMIN_TOKEN, never to its database. Address and token: CONSOLE_URL and
 * CONSOLE_ADMIN_TOKEN, else those of the running `pnpm start`, else the local default address.
 * `member` commands (members.ts) use the same endpoint.
 */
function consoleEndpoint(): { url: string; token: string } {
  const local = localRun() as { console?: string; consoleAdminToken?: string };
  const url = process.env.CONSOLE_URL ?? local.console ?? 'http://127.0.0.1:8081';
  const token = process.env.CONSOLE_ADMIN_TOKEN ?? local.consoleAdminToken;
  if (!token) throw new UsageError('CONSOLE_ADMIN_TOKEN is not set and no `pnpm start` run is recorded (.data/local-run.json)');
  return { url, token };
}

export async function postConsole(path: string, body: unknown): Promise<Record<string, unknown>> {
  const { url, token } = consoleEndpoint();
  const ask = (signal: AbortSignal) =>
    fetch(new URL(path, url), {
      method: 'POST',
      // The operator is named in the console's audit trail as in billing's (gw-actor, gw-actor-origin).
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...actorMetadata() },
      body: JSON.stringify(body),
      signal,
    });
  // A stopped console refuses the connection at once; a hung one is given 10 s.
  const res = await ask(AbortSignal.timeout(10_000)).catch((err: unknown) => {
    throw (err as Error).name === 'TimeoutError' || (err as Error).message === 'fetch failed' ? new UnreachableError('the console', url, 'CONSOLE_URL') : err;
  });
  const answer = (await res.json().catch(() => ({}))) as Record<string, unknown> & { error?: { code?: unknown; message?: unknown } };
  if (res.ok) return answer;
  const code = answer.error?.code;
  const message = typeof answer.error?.message === 'string' ? answer.error.message : `console answered HTTP ${res.status}`;
  throw isErrorCode(code) ? new GatewayError(code, message) : new Error(message);
}

export function userCommands(program: Command, run: Run): void {
  const user = program.command('user').description('members of the account dashboard');
  user
    .command('create')
    .description('creates a dashboard member and prints a one-time set-password link')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--email <email>', 'the member signs in with this address')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; email: string; json?: boolean }) =>
      run(async () => {
        const res = await postConsole('/internal/members', { account_id: o.account, email: o.email });
        return { user_id: res.user_id, set_password_url: res.set_password_url };
      }, !!o.json),
    );
  user
    .command('reset-password')
    .description('prints a one-time link for a member to choose a new password (the current one works until it is used)')
    .requiredOption('--email <email>', 'the member\'s address')
    .option('--json', 'print one JSON object')
    .action((o: { email: string; json?: boolean }) =>
      run(async () => {
        const res = await postConsole('/internal/members/reset-password', { email: o.email });
        return { user_id: res.user_id, set_password_url: res.set_password_url };
      }, !!o.json),
    );
}
