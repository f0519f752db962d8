import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { TestProject } from 'vitest/node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { testNats, testPostgres } from './support/infrastructure.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database created for this test run only; dropped when the run ends. */
    databaseUrl: string;
    /** The NATS server (JetStream enabled) the run uses. */
    natsUrl: string;
    /** This run's prefix of NATS subjects and stream names; its streams are deleted at the end. */
    eventsNamespace: string;
  }
}

export default async function setup(project: TestProject) {
  // DATABASE_URL / NATS_URL, else the local servers, else containers where Docker exists.
  const postgres = await testPostgres();
  const nats = await testNats();
  const admin = new URL(postgres.url);
  admin.pathname = '/postgres';
  const name = `gw_test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();

  const runUrl = new URL(admin);
  runUrl.pathname = `/${name}`;
  project.provide('databaseUrl', runUrl.toString());
  const natsUrl = nats.url;
  const eventsNamespace = name;
  project.provide('natsUrl', natsUrl);
  project.provide('eventsNamespace', eventsNamespace);

  return async () => {
    await deleteStreams(natsUrl, `${eventsNamespace}_`);
    const c = new Client({ connectionString: admin.toString() });
    await c.connect();
    // The run's database and the per-system databases named after it.
    const all = await c.query<{ datname: string }>('select datname from pg_database where datname = $1 or datname like $2', [name, `${name}\\_s%`]);
    for (const { datname } of all.rows) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    await c.end();
    await nats.stop?.();
    await postgres.stop?.();
  };
}

/**
 * Deletes the streams this run created (tests may create them through any service), and its
 * key-value buckets (streams `KV_<bucket>`: the text service's route health).
 */
async function deleteStreams(natsUrl: string, prefix: string): Promise<void> {
  const nc = await connect({ servers: natsUrl, timeout: 2_000 }).catch(() => null);
  if (!nc) return;
  try {
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(prefix) || name.startsWith(`KV_${prefix}`)) await jsm.streams.delete(name);
    }
  } finally {
    await nc.close();
  }
}
