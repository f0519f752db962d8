export * from './grpc/types.ts';
export { addService, bindServer, shutdownServer, type AddServiceOptions } from './grpc/server.ts';
export { createClient, type ClientOptions } from './grpc/client.ts';
export { RpcError, toStatus } from './grpc/errors.ts';
export { HealthState, addHealthService } from './grpc/health.ts';
export * as billingV1 from './gen/gateway/billing/v1/billing_pb.js';
export * as catalogV1 from './gen/gateway/catalog/v1/catalog_pb.js';
export * as eventsV1 from './gen/gateway/events/v1/events_pb.js';
export * as healthV1 from './gen/grpc/health/v1/health_pb.js';
