import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { billingV1, catalogV1, createClient } from '@gw/contracts';

/** Where `pnpm start` records the addresses of the system it started. */
export const LOCAL_RUN_FILE = resolve(process.env.GW_DATA_DIR ?? resolve(import.meta.dirname, '../../../.data'), 'local-run.json');

interface Addresses {
  billing: string;
  catalog: string;
}

/** Service addresses: env first, then the running local system, then the local defaults. */
function addresses(): Addresses {
  let local: Partial<Addresses> = {};
  try {
    local = JSON.parse(readFileSync(LOCAL_RUN_FILE, 'utf8')) as Partial<Addresses>;
  } catch {
    // no local run recorded
  }
  return {
    billing: process.env.BILLING_ADDR ?? local.billing ?? '127.0.0.1:50051',
    catalog: process.env.CATALOG_ADDR ?? local.catalog ?? '127.0.0.1:50052',
  };
}

export function clients() {
  const a = addresses();
  const billing = createClient(billingV1.BillingService, a.billing, { defaultTimeoutMs: 10_000 });
  const catalog = createClient(catalogV1.CatalogService, a.catalog, { defaultTimeoutMs: 10_000 });
  return {
    billing,
    catalog,
    close() {
      billing.close();
      catalog.close();
    },
  };
}

export type Clients = ReturnType<typeof clients>;
