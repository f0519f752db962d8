import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { accessLog } from '../src/access-log.ts';
import { createLogger } from '../src/logger.ts';

/** A service logger whose lines are kept, as the services build it (redaction included). */
function memoryLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger('svc', 'info', sink), lines };
}

function finished(url: string | undefined) {
  const { logger, lines } = memoryLogger();
  const request = { id: 'req-1', method: 'POST', routeOptions: { url }, server: { log: logger }, who: 'acct-1' };
  return { request, reply: { statusCode: 201, elapsedTime: 12.6 }, lines, logger };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('accessLog', () => {
  it("logs one line with the request's id, the route pattern, the status, whole milliseconds and the service's own fields", async () => {
    const { request, reply, lines } = finished('/v1/keys/:id');
    await accessLog<typeof request, typeof reply>((r) => ({ account: r.who }))(request, reply);
    await flush();
    expect(lines).toEqual([
      expect.objectContaining({ service: 'svc', level: 30, reqId: 'req-1', method: 'POST', route: '/v1/keys/:id', status: 201, ms: 13, account: 'acct-1', msg: 'request' }),
    ]);
  });

  it('a request that matched no route is logged as unmatched', async () => {
    const { request, reply, lines } = finished(undefined);
    await accessLog()(request, reply);
    await flush();
    expect(lines).toEqual([expect.objectContaining({ route: 'unmatched', status: 201, msg: 'request' })]);
  });

  it("the service's other lines keep the redaction the access line does without", async () => {
    const { request, reply, lines, logger } = finished('/v1/chat/completions');
    const hook = accessLog<typeof request, typeof reply>();
    await hook(request, reply);
    logger.info({ req: { headers: { authorization: 'Bearer gwk_secret' } }, messages: [{ role: 'user', content: 'private' }] }, 'slipped');
    await hook(request, reply);
    await flush();
    expect(lines.map((l) => l['msg'])).toEqual(['request', 'slipped', 'request']);
    expect(JSON.stringify(lines[1])).not.toMatch(/gwk_secret|private/);
    expect(lines[1]).toMatchObject({ req: { headers: { authorization: '[redacted]' } }, messages: '[redacted]' });
  });
});
