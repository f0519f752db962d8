import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeGateway } from '../services/edge-gateway/test/support/fake-gateway.ts';
import { ROOT } from './system.ts';

/**
 * `pnpm openapi`: writes the gateway's OpenAPI document (what `/v1/openapi.json` serves) to
 * docs/openapi.json. The document comes from the route schemas alone, so the edge app is built with
 * its gRPC clients faked: nothing is called.
 */
export const OPENAPI_FILE = join(ROOT, 'docs/openapi.json');

export async function openApiDocument(): Promise<string> {
  const { app } = await fakeGateway();
  try {
    const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`/v1/openapi.json answered ${res.statusCode}`);
    return `${JSON.stringify(res.json(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

if (process.argv[1] === import.meta.filename) {
  writeFileSync(OPENAPI_FILE, await openApiDocument());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
