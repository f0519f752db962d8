import { timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import type { DescMethod } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import * as grpc from '@grpc/grpc-js';
import { GatewayError } from '@gw/errors';
import { deserializer, serializer } from './codec.ts';
import { toStatus } from './errors.ts';
import { extractTrace, withRpcSpan } from './tracing.ts';
import type { CallContext, ServiceImpl } from './types.ts';

export interface AddServiceOptions {
  /** Called with every error that is not a domain error, so the service logs its cause. */
  onUnexpectedError?: (err: unknown, path: string) => void;
  /**
   * The shared service token (`SERVICE_TOKEN`): when set, a call whose `authorization` metadata is
   * not `Bearer <token>` is refused UNAUTHENTICATED before its handler runs. Empty or absent: no check.
   */
  token?: string;
}

/** Whether a call's metadata carries the service token (compared in constant time). */
function authorized(metadata: grpc.Metadata, expected: Buffer): boolean {
  const given = metadata.get('authorization');
  if (given.length !== 1 || typeof given[0] !== 'string') return false;
  const value = Buffer.from(given[0]);
  return value.length === expected.length && timingSafeEqual(value, expected);
}

/** The status of a call refused for its missing or wrong token; the message says what to set. */
function unauthenticated(path: string, metadata: grpc.Metadata): Partial<grpc.StatusObject> {
  const why = metadata.get('authorization').length === 0 ? 'carries no service token' : 'carries a wrong service token';
  return { code: grpc.status.UNAUTHENTICATED, details: `${path}: the call ${why}; set SERVICE_TOKEN to the same value on every service`, metadata: new grpc.Metadata() };
}

type UnaryFn = (req: unknown, ctx: CallContext) => Promise<unknown>;
type StreamFn = (req: unknown, ctx: CallContext) => AsyncIterable<unknown>;
type BidiFn = (call: grpc.ServerDuplexStream<unknown, unknown>, ctx: CallContext) => Promise<void>;

/** Per server: aborted by `shutdownServer` before it waits for calls, so long-lived calls wind up. */
const drains = new WeakMap<grpc.Server, AbortController>();

function drainOf(server: grpc.Server): AbortController {
  let drain = drains.get(server);
  if (!drain) {
    drain = new AbortController();
    drains.set(server, drain);
  }
  return drain;
}

function callContext(
  call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
  draining: AbortSignal,
  reportUnexpected: (err: unknown, path: string) => void,
): CallContext {
  const controller = new AbortController();
  (call as grpc.ServerUnaryCall<unknown, unknown>).once('cancelled', () => controller.abort());
  const deadline = call.getDeadline();
  return {
    metadata: call.metadata,
    signal: controller.signal,
    deadline: deadline instanceof Date ? deadline.getTime() : deadline,
    draining,
    reportUnexpected,
  };
}

/**
 * Registers a protobuf-es service on a grpc-js server. The grpc-js definition is derived from the
 * descriptor once, here; every call gets a server span, its trace context, and error mapping.
 */
export function addService<S extends GenServiceMethods>(
  server: grpc.Server,
  service: GenService<S>,
  impl: ServiceImpl<S>,
  opts: AddServiceOptions = {},
): void {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  const report = (err: unknown, path: string) => {
    if (!(err instanceof GatewayError)) opts.onUnexpectedError?.(err, path);
  };
  const draining = drainOf(server).signal;
  const expected = opts.token ? Buffer.from(`Bearer ${opts.token}`) : undefined;
  /** The refusal of a call without the token, or undefined when it may go on. */
  const refusal = (path: string, metadata: grpc.Metadata) => (expected && !authorized(metadata, expected) ? unauthenticated(path, metadata) : undefined);

  for (const method of service.methods as DescMethod[]) {
    const path = `/${service.typeName}/${method.name}`;
    const streaming = method.methodKind === 'server_streaming';
    const bidi = method.methodKind === 'bidi_streaming';
    if (method.methodKind === 'client_streaming') throw new Error(`${path}: client-streaming rpcs are not supported`);
    definition[method.localName] = {
      path,
      originalName: method.localName,
      requestStream: bidi,
      responseStream: streaming || bidi,
      requestSerialize: serializer(method.input) as grpc.serialize<unknown>,
      requestDeserialize: deserializer(method.input),
      responseSerialize: serializer(method.output) as grpc.serialize<unknown>,
      responseDeserialize: deserializer(method.output),
    };
    const fn = (impl as Record<string, unknown>)[method.localName];
    if (typeof fn !== 'function') throw new Error(`${path}: no handler`);

    if (bidi) {
      // No span for the stream itself: it lives as long as the connection. The handler traces
      // each message as the call it carries.
      handlers[method.localName] = (call: grpc.ServerDuplexStream<unknown, unknown>) => {
        const refused = refusal(path, call.metadata);
        if (refused) return void call.emit('error', refused);
        (fn as BidiFn).call(impl, call, callContext(call, draining, report)).then(
          () => {
            if (!call.cancelled) call.end();
          },
          (err: unknown) => {
            report(err, path);
            if (!call.cancelled) call.emit('error', toStatus(err));
          },
        );
      };
      continue;
    }

    handlers[method.localName] = streaming
      ? (call: grpc.ServerWritableStream<unknown, unknown>) => {
          const refused = refusal(path, call.metadata);
          if (refused) return void call.emit('error', refused);
          const ctx = callContext(call, draining, report);
          withRpcSpan('server', service.typeName, method.name, extractTrace(call.metadata), async () => {
            for await (const item of (fn as StreamFn).call(impl, call.request, ctx)) {
              if (call.cancelled) return;
              // Respect backpressure: wait for the socket to drain before producing more.
              if (!call.write(item)) await once(call, 'drain');
            }
            call.end();
          }).catch((err: unknown) => {
            report(err, path);
            if (!call.cancelled) call.emit('error', toStatus(err));
          });
        }
      : (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
          const refused = refusal(path, call.metadata);
          if (refused) return callback(refused);
          const ctx = callContext(call, draining, report);
          withRpcSpan('server', service.typeName, method.name, extractTrace(call.metadata), () =>
            (fn as UnaryFn).call(impl, call.request, ctx),
          ).then(
            (res) => callback(null, res),
            (err: unknown) => {
              report(err, path);
              callback(toStatus(err));
            },
          );
        };
  }
  server.addService(definition as grpc.ServiceDefinition, handlers);
}

/** Binds a server to `host:port` (port 0 picks a free one) and resolves with the bound port. */
export function bindServer(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
}

/** Lets in-flight calls finish (long-lived ones are told to wind up), then forces the rest after `timeoutMs`. */
export function shutdownServer(server: grpc.Server, timeoutMs: number): Promise<void> {
  drains.get(server)?.abort();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, timeoutMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
