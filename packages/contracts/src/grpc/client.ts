import type { DescMethod } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import * as grpc from '@grpc/grpc-js';
import { context } from '@opentelemetry/api';
import { deserializer, serializer } from './codec.ts';
import { fromServiceError, RpcError } from './errors.ts';
import { injectTrace, withRpcSpan } from './tracing.ts';
import type { CallOptions, ServiceClient } from './types.ts';

export interface ClientOptions {
  /** Deadline of every call unless the call sets its own. */
  defaultTimeoutMs?: number;
  /** Largest message accepted from the server (grpc-js defaults to 4 MiB). */
  maxReceiveBytes?: number;
  /**
   * How long a call waits for its service to be reachable before failing UNAVAILABLE (default
   * 10 s): long enough for a restart, short of a long call's deadline (a Generate has 11 minutes).
   */
  connectWaitMs?: number;
  /**
   * The shared service token sent as `authorization: Bearer <token>` on every call (default: the
   * `SERVICE_TOKEN` variable; none when empty). Servers with a token refuse calls without it.
   */
  token?: string;
  /**
   * HTTP/2 keepalive: a ping every `keepaliveMs` (default: `GRPC_KEEPALIVE_MS`, else 1 s) that must
   * be answered within as long again, else the connection is closed and its calls go to another
   * replica: a dead or hung (stopped) replica is left within about two seconds. A server whose
   * event loop stalls longer than that (a long GC pause) is left too: raise it for such servers.
   */
  keepaliveMs?: number;
  /**
   * How long a keepalive ping's answer may take before the connection is closed (default:
   * `keepaliveMs`). A connection carrying long answers needs longer: the answer's data already on
   * its way is read before the ping's answer behind it, and a caller whose event loop was busy runs
   * its timers before it reads the socket. With one second, a busy gateway dropped the text
   * service's connection in the middle of long streams and released their holds.
   */
  keepaliveTimeoutMs?: number;
  /** Metadata sent with every call (e.g. `gw-actor`, who an operator change is recorded as). */
  metadata?: Record<string, string>;
}

/**
 * The keepalive timeout of a connection whose answers are long or large (text streams, images,
 * video files): a hung replica is left within about 11 s instead of 2, and a busy caller or a
 * backlog of answer data no longer passes for a hung replica.
 */
export const LONG_ANSWERS_KEEPALIVE_TIMEOUT_MS = 10_000;

/**
 * The grpc-js target of a service address:
 * - `host:port` or `dns:///name:port` (a Kubernetes headless Service): resolved by DNS, every
 *   address it answers is a replica;
 * - a comma-separated list of IP literals (`127.0.0.1:50051,127.0.0.1:50061`, for local runs):
 *   those replicas, without DNS (`ipv4:` / `ipv6:` targets). A list must name IPs, not host names.
 * Either way the channel balances calls round-robin over the replicas that answer.
 */
export function grpcTarget(address: string): string {
  const parts = address.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length <= 1) return parts[0] ?? address;
  const v6 = parts.every((p) => p.startsWith('['));
  const v4 = parts.every((p) => /^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(p));
  if (!v4 && !v6) throw new Error(`${address}: a list of replicas names each by IP and port (127.0.0.1:50051,127.0.0.1:50061, or [::1]:50051,...); use one DNS name for replicas found by DNS`);
  return `${v6 ? 'ipv6' : 'ipv4'}:${parts.join(',')}`;
}

/** Calls are spread over every replica the target resolves to, not pinned to the first. */
const ROUND_ROBIN = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/** The `authorization` metadata a service token travels in. */
export function serviceTokenMetadata(token: string): string {
  return `Bearer ${token}`;
}

/** A call's wait for its channel; `gaveUp`: the wait ran out and the call was cancelled unsent. */
interface ReachGuard {
  readonly gaveUp: boolean;
  disarm(): void;
}

const NOTHING_TO_GUARD: ReachGuard = { gaveUp: false, disarm: () => {} };

/**
 * Cancels a call (`cancel`) if the channel does not become ready within `waitMs`: the call was
 * then never sent, so failing it is safe for any call. Costs nothing when the channel is ready,
 * as it nearly always is.
 */
function guardReachable(channel: grpc.Client, waitMs: number, cancel: () => void): ReachGuard {
  if (channel.getChannel().getConnectivityState(false) === grpc.connectivityState.READY) return NOTHING_TO_GUARD;
  const guard = { gaveUp: false, armed: true, disarm: () => (guard.armed = false) };
  channel.waitForReady(Date.now() + waitMs, (err) => {
    if (!err || !guard.armed) return;
    guard.gaveUp = true;
    cancel();
  });
  return guard;
}

function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === 'number' && 'metadata' in err;
}

/**
 * A typed client for a protobuf-es service over one grpc-js channel. Every call has a deadline,
 * carries the active trace context, and turns a domain error back into a `GatewayError`.
 * (Deliberately not `makeGenericClientConstructor`: an rpc named like a Client method would shadow it.)
 */
export function createClient<S extends GenServiceMethods>(
  service: GenService<S>,
  address: string,
  opts: ClientOptions = {},
): ServiceClient<S> & { close(): void } {
  const keepalive = opts.keepaliveMs ?? (Number(process.env.GRPC_KEEPALIVE_MS) || 1_000);
  const channel = new grpc.Client(grpcTarget(address), grpc.credentials.createInsecure(), {
    'grpc.service_config': ROUND_ROBIN,
    'grpc.keepalive_time_ms': keepalive,
    'grpc.keepalive_timeout_ms': opts.keepaliveTimeoutMs ?? keepalive,
    'grpc.keepalive_permit_without_calls': 1,
    // grpc-js backs off 1, 1.6, 2.6, 4.1 s... up to 2 minutes between connection attempts: a
    // service away for 3 s in a restart would be found again after ~5 s, past a call's deadline.
    // Our services are a hop away; trying again at least every second costs nothing.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1_000,
    ...(opts.maxReceiveBytes === undefined ? {} : { 'grpc.max_receive_message_length': opts.maxReceiveBytes }),
  });
  const defaultTimeout = opts.defaultTimeoutMs ?? 5_000;
  const connectWait = opts.connectWaitMs ?? 10_000;
  const token = opts.token ?? process.env.SERVICE_TOKEN ?? '';
  /** Every call's metadata: waits for a ready replica (within its deadline), carries the token. */
  const callMetadata = () => {
    const metadata = new grpc.Metadata();
    // A service restarting (a rolling update) is waited for, within the call's deadline,
    // instead of failing the call at once.
    metadata.setOptions({ waitForReady: true });
    if (token !== '') metadata.set('authorization', serviceTokenMetadata(token));
    for (const [key, value] of Object.entries(opts.metadata ?? {})) metadata.set(key, value);
    return metadata;
  };
  const unreachable = (path: string) => new RpcError(grpc.status.UNAVAILABLE, `${path}: UNAVAILABLE the service could not be reached within ${connectWait} ms`);
  const client: Record<string, unknown> = { close: () => channel.close() };

  for (const method of service.methods as DescMethod[]) {
    const path = `/${service.typeName}/${method.name}`;
    const serialize = serializer(method.input);
    const deserialize = deserializer(method.output);

    if (method.methodKind === 'bidi_streaming') {
      client[method.localName] = () => {
        const metadata = callMetadata();
        const stream = channel.makeBidiStreamRequest(path, serialize, deserialize, metadata);
        // Unreachable: the stream breaks, so its calls fail (or go again) as after any break.
        guardReachable(channel, connectWait, () => stream.cancel());
        return stream;
      };
      continue;
    }

    if (method.methodKind === 'server_streaming') {
      client[method.localName] = async function* (req: unknown, call: CallOptions = {}) {
        const metadata = callMetadata();
        injectTrace(metadata, context.active());
        const stream = channel.makeServerStreamRequest(path, serialize, deserialize, req as never, metadata, {
          deadline: Date.now() + (call.timeoutMs ?? defaultTimeout),
        });
        const onAbort = () => stream.cancel();
        call.signal?.addEventListener('abort', onAbort, { once: true });
        const guard = guardReachable(channel, connectWait, () => stream.cancel());
        try {
          for await (const msg of stream) yield msg;
        } catch (err) {
          if (guard.gaveUp) throw unreachable(path);
          throw isServiceError(err) ? fromServiceError(err, path) : err;
        } finally {
          guard.disarm();
          call.signal?.removeEventListener('abort', onAbort);
          stream.cancel();
        }
      };
      continue;
    }

    client[method.localName] = (req: unknown, call: CallOptions = {}) =>
      withRpcSpan('client', service.typeName, method.name, context.active(), (_span, ctx) =>
        new Promise((resolve, reject) => {
          const metadata = callMetadata();
          for (const [key, value] of Object.entries(call.metadata ?? {})) metadata.set(key, value);
          injectTrace(metadata, ctx);
          const pending = channel.makeUnaryRequest(
            path,
            serialize,
            deserialize,
            req as never,
            metadata,
            { deadline: Date.now() + (call.timeoutMs ?? defaultTimeout) },
            (err, res) => {
              guard.disarm();
              if (guard.gaveUp) reject(unreachable(path));
              else if (err) reject(fromServiceError(err, path));
              else resolve(res);
            },
          );
          const guard = guardReachable(channel, connectWait, () => pending.cancel());
          call.signal?.addEventListener('abort', () => pending.cancel(), { once: true });
        }),
      );
  }
  return client as ServiceClient<S> & { close(): void };
}
