import type { FastifyReply } from 'fastify';
import { setTimeout as delay } from 'node:timers/promises';
import { redactedUrl, requestInfoOf } from './scope.ts';

const signals = new WeakMap<FastifyReply, AbortSignal>();

/** Aborts when the client goes away before the response has been fully written. */
export function clientGone(reply: FastifyReply): AbortSignal {
  const known = signals.get(reply);
  if (known) return known;
  const controller = new AbortController();
  const res = reply.raw;
  res.once('close', () => {
    if (res.writableFinished) return;
    controller.abort();
    // onResponse never runs for these, so this is the request's only access line.
    const { request } = reply;
    const info = requestInfoOf(request);
    reply.log.info(
      { provider: info?.provider, model: info?.model ?? undefined, method: request.method, url: redactedUrl(request.url) },
      'client disconnected before the response completed',
    );
  });
  signals.set(reply, controller.signal);
  return controller.signal;
}

/** Waits `ms`; resolves false instead when the signal aborts first. */
export async function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await delay(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
