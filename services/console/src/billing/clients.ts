import type { billingV1, catalogV1, MethodsOf, ServiceClient } from '@gw/contracts';

/** The console reaches billing and catalog over gRPC only, never their databases. */
export type BillingClient = ServiceClient<MethodsOf<typeof billingV1.BillingService>>;
export type CatalogClient = ServiceClient<MethodsOf<typeof catalogV1.CatalogService>>;
