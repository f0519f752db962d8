import type { alertsV1, billingV1, catalogV1, MethodsOf, ServiceClient } from '@gw/contracts';

/**
 * The console reaches billing and catalog over gRPC only, never their databases. Of billing it uses
 * AccountService: one account's own view and changes, each call naming the member's account.
 */
export type BillingClient = ServiceClient<MethodsOf<typeof billingV1.AccountService>>;
/** Billing's alerts, their webhook deliveries and the audit trail (served beside AccountService). */
export type AlertsClient = ServiceClient<MethodsOf<typeof alertsV1.AlertsService>>;
export type CatalogClient = ServiceClient<MethodsOf<typeof catalogV1.CatalogService>>;
