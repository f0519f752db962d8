import { billingV1, createClient, type ClientOptions } from '@gw/contracts';

/**
 * Billing's three services at one address as one client: these tests act as the gateway, an
 * operator and a member alike (BillingService, BillingAdminService, AccountService; no rpc name is
 * in two of them).
 */
export function billingClients(address: string, opts: ClientOptions = {}) {
  const parts = [
    createClient(billingV1.BillingService, address, opts),
    createClient(billingV1.BillingAdminService, address, opts),
    createClient(billingV1.AccountService, address, opts),
  ] as const;
  const [hot, admin, account] = parts;
  return {
    ...hot,
    ...admin,
    ...account,
    close() {
      for (const part of parts) part.close();
    },
  };
}
