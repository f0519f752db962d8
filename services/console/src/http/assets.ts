import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * The few static files the pages use, read once at start and served from memory: Pico CSS from
 * its npm package (no CDN: the console must work without the internet) and the console's own
 * stylesheet and script. A fixed list, so no request path ever reaches the file system.
 */
const require = createRequire(import.meta.url);
const PUBLIC_DIR = join(import.meta.dirname, '..', 'public');

const FILES: Record<string, { path: string; type: string }> = {
  'pico.min.css': { path: require.resolve('@picocss/pico/css/pico.min.css'), type: 'text/css; charset=utf-8' },
  'console.css': { path: join(PUBLIC_DIR, 'console.css'), type: 'text/css; charset=utf-8' },
  'console.js': { path: join(PUBLIC_DIR, 'console.js'), type: 'text/javascript; charset=utf-8' },
  'passkeys.js': { path: join(PUBLIC_DIR, 'passkeys.js'), type: 'text/javascript; charset=utf-8' },
};

export function registerAssets(app: FastifyInstance): void {
  const loaded = new Map(
    Object.entries(FILES).map(([name, f]) => {
      const body = readFileSync(f.path);
      return [name, { body, type: f.type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"` }];
    }),
  );
  app.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const asset = loaded.get(request.params.name);
    if (!asset) return reply.code(404).type('text/plain').send('not found');
    reply.header('etag', asset.etag).header('cache-control', 'public, max-age=3600');
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  });
}
