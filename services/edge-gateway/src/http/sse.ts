import { once } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** One server-sent event: an optional `event:` name and one `data:` payload (no newlines). */
export interface SseFrame {
  event?: string;
  data: string;
}

/** A client that takes in nothing for this long while events wait for it is treated as gone. */
const STALLED_CLIENT_MS = 120_000;

/**
 * A `text/event-stream` response written straight to the socket. The stream is opened only once
 * the first event is in hand, so failures before it still answer with an HTTP error.
 *
 * `send` queues and returns at once; the queue is written at the client's pace (what queued
 * meanwhile leaves in one write). So the caller reads the upstream to its end and settles the
 * money when the upstream ends, not when a slow or stalled client has read everything: a client
 * that kept its connection open without reading held the settlement back past the hold's
 * lifetime, and was never charged. A client that reads nothing for two minutes is dropped. Once
 * the client is gone, what is sent is dropped quietly.
 */
export class SseWriter {
  readonly #raw: FastifyReply['raw'];
  readonly #queue: string[] = [];
  #pumping: Promise<void> | undefined;

  constructor(request: FastifyRequest, reply: FastifyReply, extraHeaders: Record<string, string> = {}) {
    reply.hijack();
    this.#raw = reply.raw;
    this.#raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': request.id,
      ...extraHeaders,
    });
  }

  /**
   * True once the client went away, also when it left before the stream opened (its `close` event
   * is long past then): the response is destroyed without having finished.
   */
  get clientGone(): boolean {
    return this.#raw.destroyed && !this.#raw.writableFinished;
  }

  /** Queues the frames for the client; they leave together (with whatever else is queued). */
  send(...frames: SseFrame[]): void {
    if (this.clientGone || frames.length === 0) return;
    let text = '';
    for (const frame of frames) text += frame.event ? `event: ${frame.event}\ndata: ${frame.data}\n\n` : `data: ${frame.data}\n\n`;
    this.#queue.push(text);
    this.#pumping ??= this.#pump().finally(() => {
      this.#pumping = undefined;
    });
  }

  /** Resolves once everything sent is written to the socket, or the client is gone. */
  async flushed(): Promise<void> {
    while (this.#pumping) await this.#pumping;
  }

  end(): void {
    if (!this.#raw.writableEnded) this.#raw.end();
  }

  async #pump(): Promise<void> {
    while (this.#queue.length > 0 && !this.clientGone) {
      const text = this.#queue.join('');
      this.#queue.length = 0;
      if (!this.#raw.write(text)) await this.#drained();
    }
    this.#queue.length = 0;
  }

  /** Waits for the socket to take more; a client stalled past the limit is dropped. */
  async #drained(): Promise<void> {
    const done = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<'stalled'>((resolve) => {
      timer = setTimeout(() => resolve('stalled'), STALLED_CLIENT_MS);
    });
    let outcome: unknown;
    try {
      const { signal } = done;
      outcome = await Promise.race([once(this.#raw, 'drain', { signal }), once(this.#raw, 'close', { signal }), stalled]);
    } catch {
      outcome = 'failed'; // the socket emitted an error: the client is gone
    } finally {
      clearTimeout(timer);
      done.abort(); // removes the listeners of the race's losers
    }
    if ((outcome === 'stalled' || outcome === 'failed') && !this.#raw.destroyed) this.#raw.destroy();
  }
}
