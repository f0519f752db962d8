import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressAllowed, postWebhook, signWebhook } from '../src/domain/webhook-endpoint.ts';

// The webhook sender's bounds against a real local HTTP server: the time a receiver may take, the
// size of an answer read, no redirects followed, addresses that are not public refused.

let server: Server;
let base: string;
const loopback = { allowLoopback: true };

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/slow') return; // never answers
    if (req.url === '/huge') {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const write = () => {
        while (res.write(chunk));
        res.once('drain', write);
      };
      write();
      res.on('close', () => res.removeAllListeners('drain'));
      return;
    }
    if (req.url === '/redirect') return res.writeHead(307, { location: 'http://10.0.0.1/' }).end();
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const post = (path: string, timeoutMs = 5_000) => postWebhook(`${base}${path}`, {}, '{}', { policy: loopback, timeoutMs, maxResponseBytes: 4_096 });

describe('webhook endpoint bounds', () => {
  it('a receiver that does not answer in time is an error naming the bound', async () => {
    expect(await post('/slow', 300)).toEqual({ error: 'no answer within 300 ms' });
  });

  it('an endless answer is read up to the bound, then the connection is closed', async () => {
    const outcome = await post('/huge');
    expect(outcome).toMatchObject({ status: 200 });
    expect((outcome as { body: string }).body).toHaveLength(4_096);
  });

  it('redirects are not followed (a 3xx is a failed delivery)', async () => {
    expect(await post('/redirect')).toMatchObject({ status: 307 });
  });

  it('loopback only when allowed; private, link-local, shared, mapped and unspecified addresses never', async () => {
    expect(await postWebhook(`${base}/ok`, {}, '{}', { policy: { allowLoopback: false }, timeoutMs: 1_000, maxResponseBytes: 10 })).toEqual({ error: '127.0.0.1 is not a public address' });
    expect(await post('/ok')).toMatchObject({ status: 204 });
    for (const ip of ['10.1.2.3', '172.16.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fc00::1', '::ffff:10.0.0.1', '224.0.0.1']) {
      expect({ ip, allowed: addressAllowed(ip, { allowLoopback: false }) }).toEqual({ ip, allowed: false });
    }
    expect(addressAllowed('127.0.0.1', loopback)).toBe(true);
    expect(addressAllowed('93.184.215.14', { allowLoopback: false })).toBe(true);
    expect(addressAllowed('2606:4700::1111', { allowLoopback: false })).toBe(true);
  });

  it('signatures are the ones the Standard Webhooks library verifies', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"type":"alert.low_balance","data":{"balance":1}}';
    const headers = { 'webhook-id': 'alrt_1', 'webhook-timestamp': String(ts), 'webhook-signature': signWebhook(secret, 'alrt_1', ts, body) };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });
});
