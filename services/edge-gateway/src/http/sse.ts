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
  readonly #reply: FastifyReply;
  #gone = false;

  constructor(request: FastifyRequest, reply: FastifyReply, extraHeaders: Record<string, string> = {}) {
    this.#reply = reply;
    reply.hijack();
    const raw = reply.raw;
    raw.on('close', () => {
      if (!raw.writableFinished) this.#gone = true;
    });
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': request.id,
      ...extraHeaders,
    });
  }

  /** True once the client went away. */
  get clientGone(): boolean {
    return this.#gone;
  }

  /** Writes the frames in one socket write. */
  async write(...frames: SseFrame[]): Promise<void> {
    if (this.#gone || frames.length === 0) return;
    let text = '';
    for (const frame of frames) text += frame.event ? `event: ${frame.event}\ndata: ${frame.data}\n\n` : `data: ${frame.data}\n\n`;
    if (!this.#reply.raw.write(text)) {
      await Promise.race([once(this.#reply.raw, 'drain'), once(this.#reply.raw, 'close')]);
    }
  }

  end(): void {
    if (!this.#reply.raw.writableEnded) this.#reply.raw.end();
  }
}
