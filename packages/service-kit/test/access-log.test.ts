import { describe, expect, it } from 'vitest';
import { accessLog } from '../src/access-log.ts';

function finished(url: string | undefined) {
  const lines: Array<{ fields: object; message: string }> = [];
  const request = { method: 'POST', routeOptions: { url }, log: { info: (fields: object, message: string) => lines.push({ fields, message }) }, who: 'acct-1' };
  return { request, reply: { statusCode: 201, elapsedTime: 12.6 }, lines };
}

describe('accessLog', () => {
  it('logs one line with the route pattern, the status, whole milliseconds and the service\'s own fields', async () => {
    const { request, reply, lines } = finished('/v1/keys/:id');
    await accessLog<typeof request, typeof reply>((r) => ({ account: r.who }))(request, reply);
    expect(lines).toEqual([{ fields: { method: 'POST', route: '/v1/keys/:id', status: 201, ms: 13, account: 'acct-1' }, message: 'request' }]);
  });

  it('a request that matched no route is logged as unmatched', async () => {
    const { request, reply, lines } = finished(undefined);
    await accessLog()(request, reply);
    expect(lines).toEqual([{ fields: { method: 'POST', route: 'unmatched', status: 201, ms: 13 }, message: 'request' }]);
  });
});
