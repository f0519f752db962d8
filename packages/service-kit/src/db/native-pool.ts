import type { MikroORM } from '@mikro-orm/postgresql';

/** A client of `pg`'s pool, as the kit uses it (LISTEN connections). */
export interface PgClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  release(destroy?: boolean): void;
}

/** `pg`'s pool, as the kit uses it. */
export interface PgPool {
  query<R>(query: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[] }>;
  connect(): Promise<PgClient>;
}

const pools = new WeakMap<MikroORM, Promise<PgPool>>();

/**
 * The `pg` pool MikroORM itself holds (its connections carry the service schema's search path),
 * for the few things the ORM has no call for: prepared statements and LISTEN.
 */
export function nativePool(orm: MikroORM): Promise<PgPool> {
  let pool = pools.get(orm);
  if (!pool) {
    pool = (orm.em.getConnection() as unknown as { getNativeClient(): Promise<PgPool> }).getNativeClient();
    pools.set(orm, pool);
  }
  return pool;
}
