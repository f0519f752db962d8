import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { ClientDuplexStream, Metadata, ServerDuplexStream } from '@grpc/grpc-js';

/** What a handler knows about the call besides its request. */
export interface CallContext {
  /** Incoming metadata (trace headers are already extracted). */
  metadata: Metadata;
  /** Aborted when the caller cancels or the deadline passes. */
  signal: AbortSignal;
  /** Absolute deadline (ms since epoch), or Infinity when the caller set none. */
  deadline: number;
  /**
   * Aborted when the server begins to shut down. A long-lived (bidirectional) call then takes no
   * new messages, answers the ones it took, and returns, so the drain does not wait it out.
   */
  draining: AbortSignal;
  /**
   * Reports a failure that is not a domain error, so the service logs its cause (as it does for a
   * failed rpc); for the calls a long-lived call carries (`path`: the call it stands for).
   */
  reportUnexpected: (err: unknown, path: string) => void;
}

type Method = GenServiceMethods[string];
type In<M extends Method> = MessageShape<M['input'] & DescMessage>;
type Out<M extends Method> = MessageInitShape<M['output'] & DescMessage>;
type OutShape<M extends Method> = MessageShape<M['output'] & DescMessage>;
type InInit<M extends Method> = MessageInitShape<M['input'] & DescMessage>;

/**
 * Server implementation: unary rpcs are async functions, server-streaming rpcs async generators,
 * bidirectional rpcs get the duplex call and resolve when they are done with it (the stream then ends).
 */
export type ServiceImpl<S extends GenServiceMethods> = {
  [K in keyof S]: S[K]['methodKind'] extends 'server_streaming'
    ? (req: In<S[K]>, ctx: CallContext) => AsyncIterable<Out<S[K]>>
    : S[K]['methodKind'] extends 'bidi_streaming'
      ? (call: ServerDuplexStream<In<S[K]>, Out<S[K]>>, ctx: CallContext) => Promise<void>
      : (req: In<S[K]>, ctx: CallContext) => Promise<Out<S[K]>>;
};

/** Per-call options on the client side. */
export interface CallOptions {
  /** Deadline for this call in milliseconds from now; the client's default otherwise. */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
  /**
   * Metadata of this call only (unary rpcs), over the client's: e.g. `gw-actor: member:<id>` and
   * `gw-actor-origin: <address>` for a change the audit trail records as a dashboard member's.
   */
  metadata?: Record<string, string>;
}

/**
 * Typed client: unary rpcs return promises, server-streaming rpcs async iterables, bidirectional
 * rpcs open a duplex stream (waiting for the server within no deadline: the caller bounds its messages).
 */
export type ServiceClient<S extends GenServiceMethods> = {
  [K in keyof S]: S[K]['methodKind'] extends 'server_streaming'
    ? (req: InInit<S[K]>, opts?: CallOptions) => AsyncIterable<OutShape<S[K]>>
    : S[K]['methodKind'] extends 'bidi_streaming'
      ? () => ClientDuplexStream<InInit<S[K]>, OutShape<S[K]>>
      : (req: InInit<S[K]>, opts?: CallOptions) => Promise<OutShape<S[K]>>;
};

export type AnyService = GenService<GenServiceMethods>;
export type MethodsOf<T> = T extends GenService<infer S> ? S : never;
