import { portOpen as reachable } from '../../scripts/infra.ts';

/** A server the test run uses, and how to stop it when the run started it. */
export interface TestServer {
  url: string;
  stop?: () => Promise<unknown>;
}

/**
 * PostgreSQL for the run: `DATABASE_URL` when set, else a server on 127.0.0.1:5432, else a
 * throwaway container when a Docker engine is there (testcontainers, loaded only then), else a
 * clear message. CI machines run PostgreSQL, so the container path is for developer machines.
 */
export async function testPostgres(): Promise<TestServer> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL };
  if (await reachable('127.0.0.1', 5432)) return { url: 'postgres://postgres@127.0.0.1:5432/postgres' };
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql').catch(() => ({ PostgreSqlContainer: undefined }));
  if (!PostgreSqlContainer) throw new Error('No PostgreSQL: set DATABASE_URL or run one on 127.0.0.1:5432.');
  const container = await new PostgreSqlContainer('postgres:17').start().catch((err: unknown) => {
    throw new Error(`No PostgreSQL: set DATABASE_URL, run one on 127.0.0.1:5432, or provide Docker (${(err as Error).message})`);
  });
  return { url: container.getConnectionUri(), stop: () => container.stop() };
}

/** NATS with JetStream for the run: `NATS_URL`, else 127.0.0.1:4222, else a container (as above). */
export async function testNats(): Promise<TestServer> {
  if (process.env.NATS_URL) return { url: process.env.NATS_URL };
  if (await reachable('127.0.0.1', 4222)) return { url: 'nats://127.0.0.1:4222' };
  const { NatsContainer } = await import('@testcontainers/nats').catch(() => ({ NatsContainer: undefined }));
  if (!NatsContainer) throw new Error('No NATS: set NATS_URL or run nats-server -js on 127.0.0.1:4222.');
  const container = await new NatsContainer('nats:2.10').withArg('-js', '').start().catch((err: unknown) => {
    throw new Error(`No NATS: set NATS_URL, run nats-server -js on 127.0.0.1:4222, or provide Docker (${(err as Error).message})`);
  });
  return { url: container.getConnectionOptions().servers as string, stop: () => container.stop() };
}
