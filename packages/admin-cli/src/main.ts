import { GatewayError } from '@gw/errors';
import { CommanderError } from 'commander';
import { clients, UnreachableError, type Clients } from './clients.ts';
import { VIEW } from './help.ts';
import { buildProgram } from './program.ts';
import { print, toJson, UsageError } from './output.ts';

/**
 * `pnpm admin ...`: the operator CLI. It talks to the services over gRPC (dashboard members: to
 * the console's operator endpoint over HTTP), never to their databases. It prints readable text;
 * with --json one JSON object, and failures as `{"error":{"code","message"}}` on stderr, exiting
 * non-zero (2 for a usage error).
 */
const json = process.argv.includes('--json');

/** Prints a failure in the form asked for (`{"error":{...}}` under --json) and sets the exit code. */
function fail(error: { code: string; message: string }, exitCode: number): void {
  process.stderr.write(json ? `${toJson({ error })}\n` : `error: ${error.message}${error.code === 'usage' || error.code === 'unavailable' ? '' : ` (${error.code})`}\n`);
  process.exitCode = exitCode;
}

async function run(fn: (c: Clients) => Promise<Record<string, unknown>>, asJson: boolean): Promise<void> {
  const c = clients();
  try {
    print(await fn(c), asJson, VIEW);
  } catch (err) {
    if (err instanceof GatewayError) fail((err.toBody() as { error: { code: string; message: string } }).error, 1);
    else if (err instanceof UsageError) fail({ code: 'usage', message: err.message }, 2);
    else if (err instanceof UnreachableError) fail({ code: 'unavailable', message: err.message }, 1);
    else fail({ code: 'unavailable', message: (err as Error).message }, 1);
  } finally {
    c.close();
  }
}

const program = buildProgram(run, json);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  // Help is not a failure; a usage error exits 2 (commander printed it, unless under --json).
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') process.exitCode = 0;
  else if (!json) process.exitCode = 2;
  else if (err.code === 'commander.help') fail({ code: 'usage', message: 'a command is required (pnpm admin --help lists them)' }, 2);
  else fail({ code: 'usage', message: err.message.replace(/^error: /, '') }, 2);
}
