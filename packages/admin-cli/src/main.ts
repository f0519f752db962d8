import { GatewayError } from '@gw/errors';
import { Command } from 'commander';
import { clients, type Clients } from './clients.ts';
import { accountCommands } from './commands/accounts.ts';
import { billingOpsCommands } from './commands/billing-ops.ts';
import { keyCommands } from './commands/keys.ts';
import { modelCommands } from './commands/models.ts';
import { routeCommands } from './commands/routes.ts';
import { userCommands } from './commands/users.ts';
import { print, UsageError } from './output.ts';

/**
 * `pnpm admin ...`: the operator CLI. It talks to the services over gRPC (dashboard members: to
 * the console's operator endpoint over HTTP), never to their databases. Every command prints one JSON object with --json; failures print
 * `{"error":{"code","message"}}` on stderr and exit non-zero.
 */
async function run(fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean): Promise<void> {
  const c = clients();
  try {
    print(await fn(c), json);
  } catch (err) {
    const body =
      err instanceof GatewayError
        ? err.toBody()
        : { error: { code: err instanceof UsageError ? 'usage' : 'unavailable', message: (err as Error).message } };
    process.stderr.write(`${JSON.stringify(body)}\n`);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  } finally {
    c.close();
  }
}

const program = new Command('admin').description('Operator commands for the generation gateway');
accountCommands(program, run);
keyCommands(program, run);
modelCommands(program, run);
routeCommands(program, run);
billingOpsCommands(program, run);
userCommands(program, run);
await program.parseAsync(process.argv);
