import type { alertsV1, billingV1, catalogV1, MethodsOf, ServiceClient } from '@gw/contracts';

/** The console reaches billing and catalog over gRPC only, never their databases. */
export type BillingClient = ServiceClient<MethodsOf<typeof billingV1.BillingService>>;
/** Billing's alerts, their webhook deliveries and the audit trail (served beside BillingService). */
export type AlertsClient = ServiceClient<MethodsOf<typeof alertsV1.AlertsService>>;
export type CatalogClient = ServiceClient<MethodsOf<typeof catalogV1.CatalogService>>;
