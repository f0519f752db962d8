import type * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { GatewayError, isErrorCode, type ErrorDetails } from '@gw/errors';
import { context, propagation, type Context } from '@opentelemetry/api';
import { RpcError } from './errors.ts';
import { withRpcSpan } from './tracing.ts';
import type { CallContext } from './types.ts';

/**
 * An exchange is a bidirectional stream carrying many small unary calls: each request message has
 * an `id` and the caller's trace context, and gets exactly one response with the same `id`. On a
 * hot path this saves, per call, an HTTP/2 stream with its headers, trailers and deadline timer
 * on both sides. When a stream breaks, unanswered idempotent calls are sent again on a new stream;
 * other calls fail as a broken unary call would.
 */
interface Envelope {
  id: bigint;
  traceparent: string;
}

/** A refused or failed call as an exchange response carries it. */
export interface ExchangeFailure {
  /** Public error code, empty for an internal failure. */
  code: string;
  message: string;
  detailsJson: string;
}

/** A handler's error on the wire: domain errors keep code and details; anything else hides its cause. */
export function toExchangeFailure(err: unknown): ExchangeFailure {
  if (err instanceof GatewayError) {
    return { code: err.code, message: err.message, detailsJson: Object.keys(err.details).length > 0 ? JSON.stringify(err.details) : '' };
  }
  return { code: '', message: 'internal error', detailsJson: '' };
}

/** The caller-side inverse of `toExchangeFailure`, as the unary client would have thrown it. */
export function fromExchangeFailure(failure: ExchangeFailure, path: string): GatewayError | RpcError {
  if (isErrorCode(failure.code)) {
    const details = failure.detailsJson === '' ? {} : (JSON.parse(failure.detailsJson) as ErrorDetails);
    return new GatewayError(failure.code, failure.message, details);
  }
  return new RpcError(status.INTERNAL, `${path}: INTERNAL ${failure.message}`);
}

function traceparentOf(ctx: Context): string {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier['traceparent'] ?? '';
}

function contextFrom(traceparent: string): Context {
  return traceparent === '' ? context.active() : propagation.extract(context.active(), { traceparent });
}

interface Pending<O> {
  message: object;
  resolve: (res: O) => void;
  reject: (err: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
}

export interface ExchangeClientOptions {
  /** `package.Service` of the calls, for their spans and errors. */
  service: string;
  /** Deadline of a call unless it sets its own. */
  defaultTimeoutMs?: number;
  /** The calls are idempotent: resend unanswered ones after a stream breaks (else they fail UNAVAILABLE). */
  resend: boolean;
}

/** The `result` oneof every exchange response has: the call's own answer, or an error. */
type Result = { case: string; value: unknown } | { case: 'error'; value: ExchangeFailure } | { case: undefined; value?: undefined };

/** The answer of the expected kind from an exchange response, or the error it carries, thrown. */
export function unwrapResult<T>(result: Result, expected: string, path: string): T {
  if (result.case === expected) return result.value as T;
  if (result.case === 'error') throw fromExchangeFailure(result.value as ExchangeFailure, path);
  throw new RpcError(status.INTERNAL, `${path}: the exchange answered a ${result.case ?? 'empty'} result`);
}

/**
 * The calling side: one stream, opened on first use and again after it breaks. Each call has
 * its own deadline and client span. After a break, unanswered calls are resent on the next
 * stream when the calls are idempotent (the server answers a replay with the original outcome),
 * else they fail.
 */
export class ExchangeClient<O extends { id: bigint }> {
  readonly #open: () => grpc.ClientDuplexStream<object, O>;
  readonly #service: string;
  readonly #defaultTimeoutMs: number;
  readonly #resend: boolean;
  readonly #pending = new Map<bigint, Pending<O>>();
  #stream: grpc.ClientDuplexStream<object, O> | undefined;
  #nextId = 1n;
  /** Streams in a row that ended without answering anything: the resend waits longer each time. */
  #fruitless = 0;
  #closed = false;

  constructor(open: () => grpc.ClientDuplexStream<object, O>, opts: ExchangeClientOptions) {
    this.#open = open;
    this.#service = opts.service;
    this.#defaultTimeoutMs = opts.defaultTimeoutMs ?? 5_000;
    this.#resend = opts.resend;
  }

  /** Sends one call (`build` makes its message from the id and trace context) and resolves with its response. */
  call(method: string, build: (envelope: Envelope) => object, timeoutMs?: number): Promise<O> {
    if (this.#closed) return Promise.reject(new RpcError(status.CANCELLED, `/${this.#service}/${method}: the exchange is closed`));
    return withRpcSpan('client', this.#service, method, context.active(), (_span, ctx) =>
      new Promise<O>((resolve, reject) => {
        const id = this.#nextId++;
        const message = build({ id, traceparent: traceparentOf(ctx) });
        const timer = setTimeout(() => {
          this.#pending.delete(id);
          reject(new RpcError(status.DEADLINE_EXCEEDED, `/${this.#service}/${method}: DEADLINE_EXCEEDED no answer in time`));
        }, timeoutMs ?? this.#defaultTimeoutMs);
        this.#pending.set(id, { message, resolve, reject, timer });
        this.#streamFor().write(message);
      }),
    );
  }

  /** Ends the stream; calls still waiting fail. */
  close(): void {
    this.#closed = true;
    this.#stream?.cancel();
    this.#stream = undefined;
    this.#failPending(status.CANCELLED, 'the exchange is closed');
  }

  #failPending(code: status, why: string): void {
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      this.#pending.delete(id);
      p.reject(new RpcError(code, `/${this.#service}: ${status[code]} ${why}`));
    }
  }

  #streamFor(): grpc.ClientDuplexStream<object, O> {
    if (this.#stream) return this.#stream;
    const stream = this.#open();
    this.#stream = stream;
    let answered = false;
    stream.on('data', (res: O) => {
      answered = true;
      const p = this.#pending.get(res.id);
      if (!p) return; // its deadline passed
      this.#pending.delete(res.id);
      clearTimeout(p.timer);
      p.resolve(res);
    });
    const over = () => {
      if (this.#stream !== stream) return;
      this.#stream = undefined;
      stream.cancel();
      this.#fruitless = answered ? 0 : this.#fruitless + 1;
      if (this.#resend) this.#resendLater();
      else this.#failPending(status.UNAVAILABLE, 'the stream broke before the answer');
    };
    stream.on('error', over);
    stream.on('end', over);
    return stream;
  }

  /** Sends the unanswered calls again on a new stream; right away after a stream that worked, later after each that did not. */
  #resendLater(): void {
    if (this.#pending.size === 0 || this.#closed) return;
    const delay = this.#fruitless === 0 ? 0 : Math.min(1_000, 10 * 2 ** this.#fruitless);
    setTimeout(() => {
      if (this.#closed || this.#stream || this.#pending.size === 0) return;
      const stream = this.#streamFor();
      for (const p of this.#pending.values()) stream.write(p.message);
    }, delay).unref();
  }
}

export interface ServeExchangeOptions<I, O> {
  /** `package.Service`, for the calls' spans. */
  service: string;
  /** The rpc a message stands for (its span's name). */
  methodOf: (req: I) => string;
  /** Handles one message; resolves with its whole response (id included). `signal`: the caller went away. */
  handle: (req: I, signal: AbortSignal) => Promise<O>;
  /** The response for a message whose handling failed. */
  fail: (req: I, failure: ExchangeFailure) => O;
  /** Called with every error that is not a domain error, so the service logs its cause. */
  onUnexpectedError?: (err: unknown, method: string) => void;
}

/**
 * The serving side of one exchange stream: messages are handled concurrently, each as a call of
 * its own (a server span under the caller's trace), and answered with their id. When the server
 * drains, the stream takes no more messages, answers those it took, and ends; the caller resends
 * the rest on its next stream.
 */
export function serveExchange<I extends Envelope, O>(call: grpc.ServerDuplexStream<I, O>, ctx: CallContext, opts: ServeExchangeOptions<I, O>): Promise<void> {
  return new Promise((resolve) => {
    let inFlight = 0;
    let taking = true;
    const finishIfIdle = () => {
      if (taking || inFlight > 0) return;
      ctx.draining.removeEventListener('abort', stopTaking);
      resolve();
    };
    const stopTaking = () => {
      taking = false;
      finishIfIdle();
    };
    call.on('data', (req: I) => {
      if (!taking) return;
      inFlight++;
      const method = opts.methodOf(req);
      withRpcSpan('server', opts.service, method, contextFrom(req.traceparent), () => opts.handle(req, ctx.signal))
        .catch((err: unknown) => {
          if (!(err instanceof GatewayError)) opts.onUnexpectedError?.(err, method);
          return opts.fail(req, toExchangeFailure(err));
        })
        .then((res) => {
          if (!call.cancelled) call.write(res);
          inFlight--;
          finishIfIdle();
        });
    });
    call.on('end', stopTaking);
    call.on('error', stopTaking);
    call.once('cancelled', stopTaking);
    if (ctx.draining.aborted) stopTaking();
    else ctx.draining.addEventListener('abort', stopTaking, { once: true });
  });
}
