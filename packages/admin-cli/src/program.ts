import { Command } from 'commander';
import type { Clients } from './clients.ts';
import { accountCommands } from './commands/accounts.ts';
import { alertCommands } from './commands/alerts.ts';
import { billingOpsCommands } from './commands/billing-ops.ts';
import { keyCommands } from './commands/keys.ts';
import { memberCommands } from './commands/members.ts';
import { modelCommands } from './commands/models.ts';
import { routeCommands } from './commands/routes.ts';
import { userCommands } from './commands/users.ts';
import { describeAll } from './help.ts';

export type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

/** Every command of `pnpm admin`, each described; `run` carries out a command's call and prints it. */
export function buildProgram(run: Run, json: boolean): Command {
  const program = new Command('admin')
    .description('Operator commands for the generation gateway. Every command takes --json (one JSON object instead of text).')
    .usage('<command> [options]')
    // Usage errors: commander's own text, or under --json one JSON object (printed by main).
    .exitOverride()
    .showHelpAfterError("(add --help to see the command's options)");
  if (json) program.configureOutput({ writeErr: () => {}, outputError: () => {} });
  accountCommands(program, run);
  keyCommands(program, run);
  modelCommands(program, run);
  billingOpsCommands(program, run);
  routeCommands(program, run);
  userCommands(program, run);
  memberCommands(program, run);
  alertCommands(program, run);
  describeAll(program);
  return program;
}
