import { randomBytes } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { createOrm, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { inject } from 'vitest';
import { mediaEntities } from '../src/db/entities.ts';
import { mediaMigrations } from '../src/db/migrations/index.ts';

/** Media's real schema, migrated, in a schema of its own inside this run's database. */
export async function mediaOrm(): Promise<MikroORM> {
  const orm = await createOrm({
    databaseUrl: inject('databaseUrl'),
    schema: `media_t${randomBytes(4).toString('hex')}`,
    entities: mediaEntities,
    migrations: mediaMigrations,
  });
  await runMigrations(orm);
  return orm;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A real, decodable greyscale PNG of the given size. */
export function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  const rows = Buffer.alloc((width + 1) * height, 0x80);
  for (let y = 0; y < height; y++) rows[y * (width + 1)] = 0;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
