import { setMaxListeners } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { GatewayError, isErrorCode } from '@gw/errors';
import { context, propagation, type Context } from '@opentelemetry/api';
import { decodeDetails, encodeDetails, RpcError } from './errors.ts';
import { withRpcSpan } from './tracing.ts';
import type { CallContext } from './types.ts';

/**
 * An exchange is a bidirectional stream carrying many small unary calls: each call has an `id`
 * and the caller's trace context, and gets exactly one reply with the same `id` (or, for a
 * streaming call, its items, each a reply with that `id`, until the last). On a hot path this
 * saves, per call, an HTTP/2 stream with its headers, trailers and deadline timer on both sides:
 * the extra messages of a call wake each process once more.
 *
 * A stream message carries every call (`calls`) or reply (`replies`) its sender made in one
 * event-loop turn: under concurrency, calls made together (while handling the requests, answers
 * or upstream responses that one poll of the event loop found ready) share one message's cost in
 * grpc-js and HTTP/2. Nothing waits for company: the message goes as soon as the I/O callbacks
 * already due have run (`setImmediate`), never later for I/O that has not arrived.
 *
 * A server shutting down says so first (a reply with id 0, `not_taken`), answers the calls it
 * took, refuses later ones with `not_taken` and ends the stream once the caller has ended its
 * side: the caller sends refused calls again on a new stream, so a rolling update loses nothing.
 * When a stream breaks instead (a crash), unanswered idempotent calls are sent again; other calls
 * fail as a broken unary call would. A stream refused before anything was taken (the service
 * token, or a server without the exchange) fails its calls with the server's status at once.
 */
interface Envelope {
  id: bigint;
  traceparent: string;
}

/** A refused or failed call as an exchange reply carries it. */
export interface ExchangeFailure {
  /** Public error code, empty for an internal failure. */
  code: string;
  message: string;
  detailsJson: string;
  /** The server did not take the call (it is shutting down): nothing was done. */
  notTaken: boolean;
}

const NOT_TAKEN: ExchangeFailure = { code: '', message: 'the server is shutting down; send the call again', detailsJson: '', notTaken: true };

/** A handler's error on the wire: domain errors keep code and details; anything else hides its cause. */
export function toExchangeFailure(err: unknown): ExchangeFailure {
  if (err instanceof GatewayError) {
    return { code: err.code, message: err.message, detailsJson: encodeDetails(err.details), notTaken: false };
  }
  return { code: '', message: 'internal error', detailsJson: '', notTaken: false };
}

/** The caller-side inverse of `toExchangeFailure`, as the unary client would have thrown it. */
export function fromExchangeFailure(failure: ExchangeFailure, path: string): GatewayError | RpcError {
  if (isErrorCode(failure.code)) {
    return new GatewayError(failure.code, failure.message, decodeDetails(failure.detailsJson));
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

/** The `result` oneof every exchange reply has: the call's own answer, or an error. */
type Result = { case: string; value: unknown } | { case: 'error'; value: ExchangeFailure } | { case: undefined; value?: undefined };

interface Reply {
  id: bigint;
  result: Result;
}

const notTaken = (res: Reply) => res.result.case === 'error' && (res.result.value as ExchangeFailure).notTaken;

/**
 * Runs `fn` at the end of the current event-loop turn: after the I/O callbacks that were ready
 * with the current one (and their microtasks), before the loop waits for more. Not a timer.
 * The end of the microtask queue would group only what one callback started: the gateway's holds
 * and settles and the text service's answers, each started by a socket of its own, would go
 * alone (measured at 32 connections: ~1 call a message there, against ~6 this way).
 */
function atEndOfTurn(fn: () => void): void {
  setImmediate(fn);
}

/**
 * Bulk a stream message may gather before it goes without waiting for the turn's end: a turn's
 * large calls or replies (request bodies of up to 32 MiB, whole answers) never add up in one
 * message past what the receiving side takes (`grpc.max_receive_message_length`, 40 MiB). A
 * message of several calls stays within this; a call larger than it goes alone, as it always could.
 */
const BATCH_BYTES = 1024 * 1024;

/** A call's or reply's bulk: its byte arrays and strings (UTF-16 units), nested ones included. */
function bulkOf(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (value instanceof Uint8Array) return value.byteLength;
  if (typeof value !== 'object' || value === null || depth > 8) return 0;
  let bytes = 0;
  for (const field of Array.isArray(value) ? value : Object.values(value)) bytes += bulkOf(field, depth + 1);
  return bytes;
}

/** The calls or replies of one stream message in the making. */
class Batch<T> {
  items: T[] = [];
  #bytes = 0;

  /** Adds `item`; answers the batch so far, to be sent first, when `item` would take it past `BATCH_BYTES`. */
  add(item: T): T[] | undefined {
    const bytes = bulkOf(item);
    const full = this.items.length > 0 && this.#bytes + bytes > BATCH_BYTES ? this.take() : undefined;
    this.items.push(item);
    this.#bytes += bytes;
    return full;
  }

  take(): T[] {
    const items = this.items;
    this.items = [];
    this.#bytes = 0;
    return items;
  }
}

/** The answer of the expected kind from an exchange reply, or the error it carries, thrown. */
function unwrapResult<T>(result: Result, expected: string, path: string): T {
  if (result.case === expected) return result.value as T;
  if (result.case === 'error') throw fromExchangeFailure(result.value as ExchangeFailure, path);
  throw new RpcError(status.INTERNAL, `${path}: the exchange answered a ${result.case ?? 'empty'} result`);
}

/** The exchange rpc's stream on the calling side: it writes calls, and reads replies, a turn's each. */
type Duplex<O> = grpc.ClientDuplexStream<{ calls?: object[] }, { replies: O[] }>;

interface Pending<O> {
  message: object;
  /** Takes a reply of the call; answers whether it was the call's last. */
  take: (res: O) => boolean;
  fail: (err: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
  /** The stream the call was last written to. */
  stream: Duplex<O>;
}

export interface ExchangeClientOptions {
  /** `package.Service` of the calls, for their spans and errors. */
  service: string;
  /** Deadline of a call unless it sets its own. */
  defaultTimeoutMs?: number;
  /** The calls are idempotent: resend unanswered ones after a stream breaks (else they fail UNAVAILABLE). */
  resend: boolean;
  /**
   * The message that cancels call `id`, where the exchange has one: sent when the caller stops
   * waiting (deadline, abort, a stream it stops reading), so the server stops its work too.
   */
  cancel?: (id: bigint) => object;
  /**
   * New calls go to a new stream once the current one is this old (default 30 s); the old one ends
   * once its calls are answered. Each new stream is balanced afresh over the service's replicas
   * (round-robin), so one caller's calls spread over every replica over time, new ones included.
   */
  rotateMs?: number;
}

/**
 * The calling side: one stream for new calls, opened on first use and again after the server
 * announces its shutdown or the stream breaks. Each call has its own deadline and client span.
 */
export class ExchangeClient<O extends Reply> {
  readonly #open: () => Duplex<O>;
  readonly #service: string;
  readonly #defaultTimeoutMs: number;
  readonly #resend: boolean;
  readonly #cancel: ((id: bigint) => object) | undefined;
  readonly #rotateMs: number;
  /** When the current stream was opened. */
  #openedAt = 0;
  readonly #pending = new Map<bigint, Pending<O>>();
  /** Calls (and cancellations) written in this turn, per stream: each stream's go as one message at its end. */
  readonly #outbox = new Map<Duplex<O>, Batch<object>>();
  #flushing = false;
  /** The stream new calls go to; a stream whose server announced its shutdown is no longer it. */
  #current: Duplex<O> | undefined;
  #nextId = 1n;
  /** Streams in a row that broke without answering anything: resends wait longer each time. */
  #fruitless = 0;
  #closed = false;

  constructor(open: () => Duplex<O>, opts: ExchangeClientOptions) {
    this.#open = open;
    this.#service = opts.service;
    this.#defaultTimeoutMs = opts.defaultTimeoutMs ?? 5_000;
    this.#resend = opts.resend;
    this.#cancel = opts.cancel;
    this.#rotateMs = opts.rotateMs ?? 30_000;
  }

  /** Sends one call (`build` makes its message from the id and trace context) and resolves with its reply. */
  call(method: string, build: (envelope: Envelope) => object, timeoutMs?: number): Promise<O> {
    if (this.#closed) return Promise.reject(new RpcError(status.CANCELLED, `/${this.#service}/${method}: the exchange is closed`));
    return withRpcSpan('client', this.#service, method, context.active(), (_span, ctx) =>
      new Promise<O>((resolve, reject) => {
        this.#send(method, build, ctx, timeoutMs, (res) => (resolve(res), true), reject);
      }),
    );
  }

  /**
   * Sends one streaming call and yields its replies as they come, up to the one `isLast` says
   * is the last (an error reply is always the last). Throws as `call` rejects: closed,
   * refused, deadline, broken stream. A consumer that stops early leaves the server's
   * remaining replies to be dropped. `timeoutMs` bounds the whole stream.
   */
  async *stream(method: string, build: (envelope: Envelope) => object, isLast: (res: O) => boolean, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): AsyncGenerator<O> {
    if (this.#closed) throw new RpcError(status.CANCELLED, `/${this.#service}/${method}: the exchange is closed`);
    const queue: O[] = [];
    let failure: unknown;
    let over = false;
    let wake: (() => void) | undefined;
    const notify = () => {
      wake?.();
      wake = undefined;
    };
    let id = 0n;
    // The span covers the whole stream; its outcome reaches the consumer through the queue.
    const spanned = withRpcSpan('client', this.#service, method, context.active(), (_span, ctx) =>
      new Promise<void>((resolve, reject) => {
        const take = (res: O) => {
          queue.push(res);
          notify();
          over = isLast(res) || res.result.case === 'error';
          if (over) resolve();
          return over;
        };
        const fail = (err: unknown) => {
          failure = err;
          over = true;
          notify();
          reject(err as Error);
        };
        id = this.#send(method, build, ctx, opts.timeoutMs, take, fail);
      }),
    );
    spanned.catch(() => undefined);
    const onAbort = () => {
      const p = this.#pending.get(id);
      if (p) this.#abandon(id, p, new RpcError(status.CANCELLED, `/${this.#service}/${method}: CANCELLED by the caller`));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (queue.length > 0) yield queue.shift()!;
        else if (failure !== undefined) throw failure;
        else if (over) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      // Stopped early: the server is told, and replies still on their way are dropped.
      const p = this.#pending.get(id);
      if (p) this.#abandon(id, p, new RpcError(status.CANCELLED, `/${this.#service}/${method}: CANCELLED the caller stopped reading`));
    }
  }

  /** Registers and writes one call; answers its id. */
  #send(method: string, build: (envelope: Envelope) => object, ctx: Context, timeoutMs: number | undefined, take: (res: O) => boolean, fail: (err: unknown) => void): bigint {
    const id = this.#nextId++;
    const message = build({ id, traceparent: traceparentOf(ctx) });
    const deadline = timeoutMs ?? this.#defaultTimeoutMs;
    const timer = setTimeout(() => {
      const p = this.#pending.get(id);
      if (p) this.#abandon(id, p, new RpcError(status.DEADLINE_EXCEEDED, `/${this.#service}/${method}: DEADLINE_EXCEEDED the call passed its ${deadline} ms deadline`));
    }, deadline);
    const stream = this.#stream();
    this.#pending.set(id, { message, take, fail, timer, stream });
    this.#write(stream, message);
    return id;
  }

  /** Queues a message for `stream`: it goes with the others of this turn, once the turn is done. */
  #write(stream: Duplex<O>, message: object): void {
    let batch = this.#outbox.get(stream);
    if (!batch) this.#outbox.set(stream, (batch = new Batch()));
    const full = batch.add(message);
    if (full && !stream.writableEnded && !stream.destroyed) stream.write({ calls: full });
    if (this.#flushing) return;
    this.#flushing = true;
    atEndOfTurn(() => {
      this.#flushing = false;
      for (const queuedOn of this.#outbox.keys()) this.#flush(queuedOn);
    });
  }

  /** Writes the messages queued for `stream`, as one stream message. */
  #flush(stream: Duplex<O>): void {
    const calls = this.#outbox.get(stream)?.take();
    this.#outbox.delete(stream);
    if (calls && calls.length > 0 && !stream.writableEnded && !stream.destroyed) stream.write({ calls });
  }

  /** Ends our side of `stream` once what was queued for it is written. */
  #end(stream: Duplex<O>): void {
    this.#flush(stream);
    stream.end();
  }

  /** Breaks `stream` off; what was queued for it is dropped (its calls are failed or sent again by the caller of this). */
  #cancelStream(stream: Duplex<O>): void {
    this.#outbox.delete(stream);
    stream.cancel();
  }

  /** One call answered as its unary rpc would be: the result of kind `expected`, or the error it carries, thrown. */
  async request<T>(method: string, expected: string, build: (envelope: Envelope) => object, timeoutMs?: number): Promise<T> {
    const res = await this.call(method, build, timeoutMs);
    return unwrapResult<T>(res.result, expected, `/${this.#service}/${method}`);
  }

  /** Ends the streams; calls still waiting fail. */
  close(): void {
    this.#closed = true;
    for (const p of this.#pending.values()) this.#cancelStream(p.stream);
    if (this.#current) this.#cancelStream(this.#current);
    this.#current = undefined;
    for (const [id, p] of this.#pending) this.#settle(id, p, new RpcError(status.CANCELLED, `/${this.#service}: CANCELLED the exchange is closed`));
  }

  /**
   * Fails a call the caller no longer waits for, and tells the server to stop it where it can; a
   * call given up in the turn it was made is not sent at all.
   */
  #abandon(id: bigint, p: Pending<O>, err: Error): void {
    this.#settle(id, p, err);
    if (!this.#cancel) return;
    const queued = this.#outbox.get(p.stream)?.items;
    const at = queued ? queued.indexOf(p.message) : -1;
    if (at >= 0) queued!.splice(at, 1);
    else if (!p.stream.writableEnded && !p.stream.destroyed) this.#write(p.stream, this.#cancel(id));
  }

  /** Gives the call a reply, or fails it; a call given its last reply, or failed, is over. */
  #settle(id: bigint, p: Pending<O>, outcome: O | Error): void {
    if (outcome instanceof Error) p.fail(outcome);
    else if (!p.take(outcome)) return;
    this.#pending.delete(id);
    clearTimeout(p.timer);
  }

  #waitingOn(stream: Duplex<O>): boolean {
    for (const p of this.#pending.values()) if (p.stream === stream) return true;
    return false;
  }

  #stream(): Duplex<O> {
    if (this.#current && Date.now() - this.#openedAt >= this.#rotateMs) {
      // Retired: later calls go to a new stream; this one ends once nothing waits on it.
      const old = this.#current;
      this.#current = undefined;
      if (!this.#waitingOn(old)) this.#end(old);
    }
    if (this.#current) return this.#current;
    const stream = this.#open();
    this.#current = stream;
    this.#openedAt = Date.now();
    let answered = false;
    /** A stream the server is retiring ends from our side once nothing waits on it. */
    const retireIfIdle = () => {
      if (this.#current !== stream && !this.#waitingOn(stream) && !stream.writableEnded) this.#end(stream);
    };
    stream.on('data', ({ replies }: { replies: O[] }) => {
      answered = true;
      this.#fruitless = 0;
      for (const res of replies) {
        if (res.id === 0n) {
          // The server is shutting down: new calls go to a new stream (another replica, or its successor).
          if (this.#current === stream) this.#current = undefined;
          continue;
        }
        const p = this.#pending.get(res.id);
        if (!p) continue; // its deadline passed
        if (notTaken(res)) {
          if (this.#current === stream) this.#current = undefined;
          p.stream = this.#stream();
          this.#write(p.stream, p.message); // nothing was done: sending it again is safe for any call
        } else {
          this.#settle(res.id, p, res);
        }
      }
      retireIfIdle();
    });
    let over = false;
    const onOver = (err?: { code?: unknown }) => {
      if (over) return; // 'error' and 'end' can both come
      over = true;
      if (this.#current === stream) this.#current = undefined;
      this.#cancelStream(stream);
      const unanswered = [...this.#pending].filter(([, p]) => p.stream === stream);
      if (err?.code === status.UNAUTHENTICATED || err?.code === status.UNIMPLEMENTED) {
        // Refused before any call was taken (the service token; a server without the exchange):
        // sending again cannot help, so the calls fail as unary ones would.
        const name = err.code === status.UNAUTHENTICATED ? 'UNAUTHENTICATED' : 'UNIMPLEMENTED';
        const message = (err as { details?: string }).details ?? 'the stream was refused';
        for (const [id, p] of unanswered) this.#settle(id, p, new RpcError(err.code, `/${this.#service}: ${name} ${message}`));
        return;
      }
      if (!answered) this.#fruitless++;
      if (unanswered.length === 0 || this.#closed) return;
      if (!this.#resend) {
        for (const [id, p] of unanswered) this.#settle(id, p, new RpcError(status.UNAVAILABLE, `/${this.#service}: UNAVAILABLE the stream broke before the answer`));
        return;
      }
      // Idempotent calls go again on a new stream: at once after a stream that worked, later after each that did not.
      const delay = this.#fruitless === 0 ? 0 : Math.min(1_000, 10 * 2 ** this.#fruitless);
      setTimeout(() => {
        for (const [id, p] of unanswered) {
          if (this.#closed || this.#pending.get(id) !== p) continue;
          p.stream = this.#stream();
          this.#write(p.stream, p.message);
        }
      }, delay).unref();
    };
    stream.on('error', onOver);
    stream.on('end', onOver);
    return stream;
  }
}

/** An exchange reply as the server writes it: the call's id and its `result` oneof. */
interface ReplyInit {
  id?: bigint;
  result?: unknown;
}

export interface ServeExchangeOptions<I, O extends ReplyInit> {
  /** `package.Service`, for the calls' spans. */
  service: string;
  /** The rpc a call stands for (its span's name). */
  methodOf: (req: I) => string;
  /**
   * Handles one call; resolves with its reply's `result` (the call's own answer), or, for a
   * streaming call, yields each item's `result` (each is sent as it comes). `signal`: the caller
   * went away.
   */
  handle: (req: I, signal: AbortSignal) => Promise<O['result']> | AsyncIterable<O['result']>;
  /** Whether a call cancels the call with its id (the caller stopped waiting): its handler's signal aborts. */
  isCancel?: (req: I) => boolean;
}

const isAsyncIterable = (value: object): value is AsyncIterable<unknown> => Symbol.asyncIterator in value;

/** How long a shutting-down server waits for a caller to end its side once every taken call is answered. */
const RETIRE_GRACE_MS = 1_000;

/**
 * The serving side of one exchange stream: calls are handled concurrently, each as a call of its
 * own (a server span under the caller's trace), and answered with their id; the replies finished
 * in one turn go as one stream message. Resolves when the stream is over: the caller ended its
 * side, went away, or (the server shutting down) every taken call is answered and the caller
 * ended its side or the grace ran out. A failed call is answered with the `error` result every
 * exchange reply has; one that is not a domain error is reported to the service
 * (`ctx.reportUnexpected`) like a failed rpc.
 */
export function serveExchange<I extends Envelope, O extends ReplyInit>(
  call: grpc.ServerDuplexStream<{ calls: I[] }, { replies?: O[] }>,
  ctx: CallContext,
  opts: ServeExchangeOptions<I, O>,
): Promise<void> {
  const respond = (id: bigint, result: O['result']) => ({ id, result }) as O;
  const fail = (id: bigint, failure: ExchangeFailure) => respond(id, { case: 'error', value: failure });
  /** Replies finished in this turn: they go as one message once it is done. */
  const outbox = new Batch<O>();
  let flushing = false;
  const write = (replies: O[]) => {
    if (replies.length > 0 && !call.cancelled && !call.writableEnded) call.write({ replies });
  };
  const flush = () => {
    flushing = false;
    write(outbox.take());
  };
  const send = (reply: O) => {
    if (call.cancelled) return;
    const full = outbox.add(reply);
    if (full) write(full);
    if (flushing) return;
    flushing = true;
    atEndOfTurn(flush);
  };
  // One listener per call in progress (see `take`), as many as the caller sends at once.
  if (opts.isCancel) setMaxListeners(0, ctx.signal);
  return new Promise((resolve) => {
    let inFlight = 0;
    let taking = true;
    let callerDone = false;
    let grace: ReturnType<typeof setTimeout> | undefined;
    const finish = () => {
      clearTimeout(grace);
      ctx.draining.removeEventListener('abort', retire);
      flush(); // before the stream ends
      resolve();
    };
    const check = () => {
      if (inFlight > 0) return;
      if (callerDone) finish();
      else if (!taking) grace ??= setTimeout(finish, RETIRE_GRACE_MS);
    };
    const retire = () => {
      taking = false;
      send(fail(0n, NOT_TAKEN));
      check();
    };
    /** Calls in progress by id, to abort one its caller cancels. */
    const running = new Map<bigint, AbortController>();
    const take = (req: I) => {
      if (opts.isCancel?.(req)) {
        running.get(req.id)?.abort();
        return;
      }
      if (!taking) {
        send(fail(req.id, NOT_TAKEN));
        return;
      }
      inFlight++;
      const method = opts.methodOf(req);
      // Only an exchange whose calls can be cancelled pays for a controller per call. It follows
      // the stream's signal through a listener taken off when the call ends: `AbortSignal.any`
      // (weak references to its sources) cost the text service about 2% of its CPU.
      const cancelled = opts.isCancel ? new AbortController() : undefined;
      const streamAborted = cancelled && (() => cancelled.abort(ctx.signal.reason));
      if (cancelled && streamAborted) {
        running.set(req.id, cancelled);
        if (ctx.signal.aborted) streamAborted();
        else ctx.signal.addEventListener('abort', streamAborted, { once: true });
      }
      withRpcSpan('server', opts.service, method, contextFrom(req.traceparent), async () => {
        const out = opts.handle(req, cancelled?.signal ?? ctx.signal);
        if (!isAsyncIterable(out)) return respond(req.id, await out);
        for await (const result of out) send(respond(req.id, result));
        return undefined; // every item is sent
      })
        .catch((err: unknown) => {
          ctx.reportUnexpected(err, `/${opts.service}/${method}`);
          return fail(req.id, toExchangeFailure(err));
        })
        .then((res) => {
          running.delete(req.id);
          if (streamAborted) ctx.signal.removeEventListener('abort', streamAborted);
          // A cancelled call's answer has no one waiting for it.
          if (res && !cancelled?.signal.aborted) send(res);
          inFlight--;
          check();
        });
    };
    call.on('data', ({ calls }: { calls: I[] }) => {
      for (const req of calls) take(req);
    });
    const callerEnded = () => {
      callerDone = true;
      check();
    };
    call.on('end', callerEnded);
    call.on('error', callerEnded);
    call.once('cancelled', callerEnded);
    if (ctx.draining.aborted) retire();
    else ctx.draining.addEventListener('abort', retire, { once: true });
  });
}
