import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { UsageError } from '../output.ts';
import { postConsole } from './users.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

const ROLES = ['owner', 'admin', 'developer', 'viewer'];

function role(value: string): string {
  if (!ROLES.includes(value)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  return value;
}

/**
 * Members of an account's dashboard with their roles (owner, admin, developer, viewer), through
 * the console's operator endpoint: the console owns members, their passwords and sessions.
 */
export function memberCommands(program: Command, run: Run): void {
  const member = program.command('member').description('dashboard members and their roles: add, list, change a role, remove');
  member
    .command('add')
    .description('adds a member with a role and prints a one-time set-password link for them')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--email <email>', 'the member signs in with this address')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`)
    .option('--json', 'print one JSON object')
    .action((o: { account: string; email: string; role: string; json?: boolean }) =>
      run(async () => {
        const res = await postConsole('/internal/members', { account_id: o.account, email: o.email, role: role(o.role) });
        return { member_id: res.member_id, set_password_url: res.set_password_url };
      }, !!o.json),
    );
  member
    .command('list')
    .description("lists an account's members with their roles and whether they have set a password")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print one JSON object')
    .action((o: { account: string; json?: boolean }) => run(async () => postConsole('/internal/members/list', { account_id: o.account }), !!o.json));
  member
    .command('role')
    .description('gives a member another role (an account always keeps one owner)')
    .requiredOption('--member <id>', 'member id')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`)
    .option('--json', 'print one JSON object')
    .action((o: { member: string; role: string; json?: boolean }) =>
      run(async () => postConsole('/internal/members/role', { member_id: o.member, role: role(o.role) }), !!o.json),
    );
  member
    .command('remove')
    .description('removes a member: their sessions and links end at once (never the last owner)')
    .requiredOption('--member <id>', 'member id')
    .option('--json', 'print one JSON object')
    .action((o: { member: string; json?: boolean }) => run(async () => postConsole('/internal/members/remove', { member_id: o.member }), !!o.json));
}
