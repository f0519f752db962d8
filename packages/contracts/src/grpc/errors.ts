import { ERROR_TABLE, GatewayError, isErrorCode, type ErrorDetails } from '@gw/errors';
import { Metadata, status, type ServiceError, type StatusObject } from '@grpc/grpc-js';

/** Trailing metadata keys that carry a domain error across gRPC. */
const CODE_KEY = 'gw-error-code';
const DETAILS_KEY = 'gw-error-details';

/** A domain error's details as they travel (metadata, exchange responses): JSON, '' for none. */
export function encodeDetails(details: ErrorDetails): string {
  return Object.keys(details).length > 0 ? JSON.stringify(details) : '';
}

/** The inverse of `encodeDetails`. */
export function decodeDetails(raw: string | undefined): ErrorDetails {
  return raw ? (JSON.parse(raw) as ErrorDetails) : {};
}

/**
 * Turns anything a handler threw into a gRPC status. Domain errors keep their public code in
 * trailing metadata; anything else becomes INTERNAL with no internals in the message.
 */
export function toStatus(err: unknown): Partial<StatusObject> {
  const metadata = new Metadata();
  if (err instanceof GatewayError) {
    metadata.set(CODE_KEY, err.code);
    const details = encodeDetails(err.details);
    if (details !== '') metadata.set(DETAILS_KEY, details);
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
    return new GatewayError(code, err.details, decodeDetails(typeof raw === 'string' ? raw : undefined));
  }
  return new RpcError(err.code, `${path}: ${status[err.code] ?? err.code} ${err.details}`);
}
