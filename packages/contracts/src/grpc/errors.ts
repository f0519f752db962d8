import { ERROR_TABLE, GatewayError, isErrorCode, type ErrorDetails } from '@gw/errors';
import { Metadata, status, type ServiceError, type StatusObject } from '@grpc/grpc-js';

/** Trailing metadata keys that carry a domain error across gRPC. */
const CODE_KEY = 'gw-error-code';
const DETAILS_KEY = 'gw-error-details';

/**
 * Turns anything a handler threw into a gRPC status. Domain errors keep their public code in
 * trailing metadata; anything else becomes INTERNAL with no internals in the message.
 */
export function toStatus(err: unknown): Partial<StatusObject> {
  const metadata = new Metadata();
  if (err instanceof GatewayError) {
    metadata.set(CODE_KEY, err.code);
    if (Object.keys(err.details).length > 0) metadata.set(DETAILS_KEY, JSON.stringify(err.details));
    return { code: ERROR_TABLE[err.code].grpc, details: err.message, metadata };
  }
  return { code: status.INTERNAL, details: 'internal error', metadata };
}

/** A failed internal call that carried no domain error (service down, deadline, internal bug). */
export class RpcError extends Error {
  readonly grpcCode: number;
  constructor(grpcCode: number, message: string) {
    super(message);
    this.name = 'RpcError';
    this.grpcCode = grpcCode;
  }
}

/** The client-side inverse of `toStatus`. */
export function fromServiceError(err: ServiceError, path: string): GatewayError | RpcError {
  const code = err.metadata?.get(CODE_KEY)[0];
  if (isErrorCode(code)) {
    const raw = err.metadata.get(DETAILS_KEY)[0];
    const details = typeof raw === 'string' ? (JSON.parse(raw) as ErrorDetails) : {};
    return new GatewayError(code, err.details, details);
  }
  return new RpcError(err.code, `${path}: ${status[err.code] ?? err.code} ${err.details}`);
}
