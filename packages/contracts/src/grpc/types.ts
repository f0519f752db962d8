import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { Metadata } from '@grpc/grpc-js';

/** What a handler knows about the call besides its request. */
export interface CallContext {
  /** Incoming metadata (trace headers are already extracted). */
  metadata: Metadata;
  /** Aborted when the caller cancels or the deadline passes. */
  signal: AbortSignal;
  /** Absolute deadline (ms since epoch), or Infinity when the caller set none. */
  deadline: number;
}

type Method = GenServiceMethods[string];
type In<M extends Method> = MessageShape<M['input'] & DescMessage>;
type Out<M extends Method> = MessageInitShape<M['output'] & DescMessage>;
type OutShape<M extends Method> = MessageShape<M['output'] & DescMessage>;
type InInit<M extends Method> = MessageInitShape<M['input'] & DescMessage>;

/** Server implementation: unary rpcs are async functions, server-streaming rpcs async generators. */
export type ServiceImpl<S extends GenServiceMethods> = {
  [K in keyof S]: S[K]['methodKind'] extends 'server_streaming'
    ? (req: In<S[K]>, ctx: CallContext) => AsyncIterable<Out<S[K]>>
    : (req: In<S[K]>, ctx: CallContext) => Promise<Out<S[K]>>;
};

/** Per-call options on the client side. */
export interface CallOptions {
  /** Deadline for this call in milliseconds from now; the client's default otherwise. */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
}

/** Typed client: unary rpcs return promises, server-streaming rpcs async iterables. */
export type ServiceClient<S extends GenServiceMethods> = {
  [K in keyof S]: S[K]['methodKind'] extends 'server_streaming'
    ? (req: InInit<S[K]>, opts?: CallOptions) => AsyncIterable<OutShape<S[K]>>
    : (req: InInit<S[K]>, opts?: CallOptions) => Promise<OutShape<S[K]>>;
};

export type AnyService = GenService<GenServiceMethods>;
export type MethodsOf<T> = T extends GenService<infer S> ? S : never;
