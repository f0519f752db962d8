import { createServer } from 'node:net';

/** A port `pnpm start` must bind, the variable that sets it, and what takes it. */
export interface PortNeed {
  /** The variable a user changes to move it (`CONSOLE_PORT`), or the one that avoids needing it. */
  variable: string;
  port: number;
  /** How the refusal names it: defaults to `<variable>=<port>`. */
  label?: string;
  /** What to tell the user when it is taken: defaults to `set <variable> to a free port`. */
  remedy?: string;
}

/** A port number from an environment variable, or the fallback; anything else is a one-line refusal. */
export function portFromEnv(variable: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback;
  const port = /^[0-9]{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new StartRefusal(`${variable}=${raw} is not a port number (1-65535); set ${variable} to a free port`);
  return port;
}

/** True when this process can listen on host:port now (it closes the listener at once). */
export function canListen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => done(true)));
  });
}

/** A free port the kernel picks on host (for addresses nobody types, such as metrics). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen({ port: 0, host }, () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/**
 * Checks every port before anything starts: the first one taken (or given twice) is refused in
 * one line naming its variable, e.g. `CONSOLE_PORT=8081 is in use; set CONSOLE_PORT to a free port`.
 */
export async function checkPorts(needs: PortNeed[]): Promise<void> {
  const seen = new Map<number, string>();
  for (const need of needs) {
    const other = seen.get(need.port);
    if (other !== undefined) {
      throw new StartRefusal(`${need.variable}=${need.port} is the same port as ${other}; set ${need.variable} to another free port`);
    }
    seen.set(need.port, need.variable);
    if (!(await canListen(need.port))) {
      throw new StartRefusal(`${need.label ?? `${need.variable}=${need.port}`} is in use; ${need.remedy ?? `set ${need.variable} to a free port`}`);
    }
  }
}

/** Why `pnpm start` will not start, in one line for the user (printed without a stack trace). */
export class StartRefusal extends Error {
  override name = 'StartRefusal';
}
