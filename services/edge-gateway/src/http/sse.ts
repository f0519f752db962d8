import { once } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** One server-sent event: an optional `event:` name and one `data:` payload (no newlines). */
export interface SseFrame {
  event?: string;
  data: string;
}

/**
 * A `text/event-stream` response written straight to the socket. The stream is opened only once
 * the first event is in hand, so failures before it still answer with an HTTP error. Writes
 * respect backpressure; once the client is gone, writes are dropped quietly while the caller
 * keeps draining the upstream (billing needs its end).
 */
export class SseWriter {
  readonly #raw: FastifyReply['raw'];

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

  /** Writes the frames in one socket write. */
  async write(...frames: SseFrame[]): Promise<void> {
    if (this.clientGone || frames.length === 0) return;
    let text = '';
    for (const frame of frames) text += frame.event ? `event: ${frame.event}\ndata: ${frame.data}\n\n` : `data: ${frame.data}\n\n`;
    if (!this.#raw.write(text)) {
      await Promise.race([once(this.#raw, 'drain'), once(this.#raw, 'close')]);
    }
  }

  end(): void {
    if (!this.#raw.writableEnded) this.#raw.end();
  }
}
