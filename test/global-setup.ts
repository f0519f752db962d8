import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database created for this test run only; dropped when the run ends. */
    databaseUrl: string;
    /** The NATS server (JetStream enabled) the run uses; tests name their own streams. */
    natsUrl: string;
  }
}

/** The server to create the run's database on: DATABASE_URL's server, else the local default. */
function serverUrl(): URL {
  return new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
}

export default async function setup(project: TestProject) {
  const admin = serverUrl();
  admin.pathname = '/postgres';
  const name = `gw_test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();

  const runUrl = new URL(admin);
  runUrl.pathname = `/${name}`;
  project.provide('databaseUrl', runUrl.toString());
  project.provide('natsUrl', process.env.NATS_URL ?? 'nats://127.0.0.1:4222');

  return async () => {
    const c = new Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  };
}
