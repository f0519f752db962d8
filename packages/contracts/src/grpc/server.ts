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
