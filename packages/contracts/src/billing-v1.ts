// Billing's services by audience share one proto package, and callers one namespace (`billingV1`):
// BillingService (a billed request's calls), BillingAdminService (operators), AccountService (an
// account's own view and changes). AlertsService stays `alertsV1`.
export * from './gen/gateway/billing/v1/billing_pb.js';
export * from './gen/gateway/billing/v1/billing_admin_pb.js';
export * from './gen/gateway/billing/v1/account_pb.js';
