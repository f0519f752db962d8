import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { clientGone, sleep } from './abort.ts';

/**
 * A server-sent-event response. Events are written to a stream fastify pipes to the socket, with
 * backpressure, an optional pause between events, and an early stop when the client disconnects.
 */
export class SseStream {
  private readonly body = new PassThrough();
  private readonly signal: AbortSignal;
  private readonly delayMs: number;
  private readonly eol: string;
  private first = true;

  /** `eol` is the line terminator: `\n` (OpenAI, Anthropic) or `\r\n` (Gemini). */
  constructor(reply: FastifyReply, opts: { delayMs: number; eol?: '\n' | '\r\n' }) {
    this.signal = clientGone(reply);
    this.delayMs = opts.delayMs;
    this.eol = opts.eol ?? '\n';
    reply
      .code(200)
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('x-accel-buffering', 'no')
      .send(this.body);
  }

  get closed(): boolean {
    return this.signal.aborted || this.body.destroyed;
  }

  /** One event: optional `event:` line plus a `data:` line (objects are JSON-encoded). */
  event(name: string | undefined, data: unknown): Promise<boolean> {
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    const head = name === undefined ? '' : `event: ${name}${this.eol}`;
    return this.raw(`${head}data: ${payload}${this.eol}${this.eol}`);
  }

  /** Writes text as is; resolves false once the client has gone. */
  async raw(text: string): Promise<boolean> {
    if (this.delayMs > 0 && !this.first && !(await sleep(this.delayMs, this.signal))) return false;
    this.first = false;
    if (this.closed) return false;
    if (!this.body.write(text)) {
      const done = new AbortController();
      const opts = { signal: done.signal };
      await Promise.race([once(this.body, 'drain', opts), once(this.body, 'close', opts)]).catch(() => undefined);
      done.abort(); // drop the listener that did not fire
    }
    return !this.closed;
  }

  end(): void {
    if (!this.body.destroyed) this.body.end();
  }
}
