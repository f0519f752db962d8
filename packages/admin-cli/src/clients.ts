import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { resolve } from 'node:path';
import { status } from '@grpc/grpc-js';
import { alertsV1, billingV1, catalogV1, createClient, RpcError } from '@gw/contracts';

/** Where `pnpm start` records the addresses of the system it started. */
export const LOCAL_RUN_FILE = resolve(process.env.GW_DATA_DIR ?? resolve(import.meta.dirname, '../../../.data'), 'local-run.json');

/** How long a command waits for a service it cannot reach before it says so. */
export const REACH_WAIT_MS = 1_000;

interface Addresses {
  billing: string;
  catalog: string;
}

/** What `pnpm start` recorded, or nothing. */
export function localRun(): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(LOCAL_RUN_FILE, 'utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** Service addresses: env first, then the running local system, then the local defaults. */
function addresses(): Addresses {
  const local = localRun() as Partial<Addresses>;
  return {
    billing: process.env.BILLING_ADDR ?? local.billing ?? '127.0.0.1:50051',
    catalog: process.env.CATALOG_ADDR ?? local.catalog ?? '127.0.0.1:50052',
  };
}

/** A service the CLI could not reach: names its address and what to check. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
  constructor(service: string, address: string, variable: string) {
    super(`${service} at ${address} did not answer: is \`pnpm start\` running? (elsewhere: set ${variable})`);
  }
}

/** The client with each rpc's failure to reach its service turned into an `UnreachableError`. */
function reporting<T extends object>(client: T, service: string, address: string, variable: string): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || prop === 'close') return value;
      return async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (err) {
          // UNAVAILABLE: never reached (the call was not sent); a deadline spent waiting for a connection likewise.
          const unreached = err instanceof RpcError && (err.grpcCode === status.UNAVAILABLE || (err.grpcCode === status.DEADLINE_EXCEEDED && /LB pick|connect/i.test(err.message)));
          if (unreached) {
            throw new UnreachableError(service, address, variable);
          }
          throw err;
        }
      };
    },
  });
}

/** Metadata values are printable ASCII. */
const ascii = (s: string) => s.replace(/[^\x20-\x7e]/g, '?').slice(0, 100);

/** Who the audit trail records for this CLI's changes (`operator:<os user>`) and from where (`cli@<host>`). */
export function actorMetadata(): Record<string, string> {
  let user = process.env.USER ?? '';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container's numeric user): the environment's name, if any.
  }
  return { 'gw-actor': `operator:${ascii(user || 'unknown')}`, 'gw-actor-origin': `cli@${ascii(hostname())}` };
}

export function clients() {
  const a = addresses();
  // A call waits REACH_WAIT_MS for its service, and up to 30 s for an answer once connected (a catalog sync asks every provider).
  // The services' shared token: SERVICE_TOKEN, else the one the running `pnpm start` made.
  const token = process.env.SERVICE_TOKEN ?? (localRun().serviceToken as string | undefined);
  const options = { defaultTimeoutMs: 30_000, connectWaitMs: REACH_WAIT_MS, metadata: actorMetadata(), token };
  // Billing's services by audience, all at one address: the operators', an account's own, and the
  // request path's (for the switches an operator reads).
  const billingAdmin = reporting(createClient(billingV1.BillingAdminService, a.billing, options), 'billing', a.billing, 'BILLING_ADDR');
  const accounts = reporting(createClient(billingV1.AccountService, a.billing, options), 'billing', a.billing, 'BILLING_ADDR');
  const billing = reporting(createClient(billingV1.BillingService, a.billing, options), 'billing', a.billing, 'BILLING_ADDR');
  const alerts = reporting(createClient(alertsV1.AlertsService, a.billing, options), 'billing', a.billing, 'BILLING_ADDR');
  const catalog = reporting(createClient(catalogV1.CatalogService, a.catalog, options), 'catalog', a.catalog, 'CATALOG_ADDR');
  return {
    billingAdmin,
    accounts,
    billing,
    alerts,
    catalog,
    close() {
      billingAdmin.close();
      accounts.close();
      billing.close();
      alerts.close();
      catalog.close();
    },
  };
}

export type Clients = ReturnType<typeof clients>;
